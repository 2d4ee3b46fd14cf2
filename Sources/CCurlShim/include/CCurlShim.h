// Typed entry points to libcurl's variadic functions, which Swift cannot call.
//
// libcurl itself is loaded at run time (dlopen), so nothing here needs its headers or links against it:
// each function takes the address of the libcurl function it forwards to.
#ifndef CCURLSHIM_H
#define CCURLSHIM_H

#include <stddef.h>
#include <stdint.h>

/// The layout of libcurl's `struct CURLMsg` (curl/multi.h), stable since libcurl 7.9.
typedef struct {
    int msg;
    void *easy_handle;
    union {
        void *whatever;
        int result;
    } data;
} ccurl_message;

/// `curl_easy_setopt(handle, option, (long)value)`
int ccurl_easy_setopt_long(void *setopt, void *handle, int option, long value);
/// `curl_easy_setopt(handle, option, (void *)value)`: strings, lists, callbacks' user data.
int ccurl_easy_setopt_pointer(void *setopt, void *handle, int option, const void *value);
/// `curl_easy_setopt(handle, option, (curl_off_t)value)`
int ccurl_easy_setopt_offset(void *setopt, void *handle, int option, int64_t value);
/// `curl_easy_setopt(handle, option, &blob)` with a `struct curl_blob` of `data` and `length` that libcurl
/// copies (`CURL_BLOB_COPY`), so the bytes may go as soon as it returns.
int ccurl_easy_setopt_blob(void *setopt, void *handle, int option, const void *data, size_t length);
/// `curl_easy_getinfo(handle, info, (char **)value)`
int ccurl_easy_getinfo_string(void *getinfo, void *handle, int info, const char **value);
/// The first fields of libcurl's `curl_version_info_data` (curl/curl.h), the same in every version.
typedef struct {
    int age;
    const char *version;
    unsigned int version_num;
    const char *host;
    int features;
    const char *ssl_version;
} ccurl_version_info;
/// `curl_easy_getinfo(handle, info, (long *)value)`
int ccurl_easy_getinfo_long(void *getinfo, void *handle, int info, long *value);
/// `curl_easy_getinfo(handle, info, (curl_off_t *)value)`
int ccurl_easy_getinfo_offset(void *getinfo, void *handle, int info, int64_t *value);
/// `curl_multi_setopt(multi, option, (long)value)`
int ccurl_multi_setopt_long(void *setopt, void *multi, int option, long value);
/// Names the calling thread, as `ps` and /proc show it (15 characters at most on Linux).
int ccurl_name_this_thread(const char *name);

#endif
