#define _GNU_SOURCE
#include <pthread.h>

#include "CCurlShim.h"

typedef int (*variadic_setopt)(void *, int, ...);
typedef int (*variadic_getinfo)(void *, int, ...);

int ccurl_easy_setopt_long(void *setopt, void *handle, int option, long value) {
    return ((variadic_setopt)setopt)(handle, option, value);
}

int ccurl_easy_setopt_pointer(void *setopt, void *handle, int option, const void *value) {
    return ((variadic_setopt)setopt)(handle, option, value);
}

int ccurl_easy_setopt_offset(void *setopt, void *handle, int option, int64_t value) {
    return ((variadic_setopt)setopt)(handle, option, value);
}

int ccurl_easy_setopt_blob(void *setopt, void *handle, int option, const void *data, size_t length) {
    // The layout of libcurl's `struct curl_blob` (curl/easy.h, 7.71 and later).
    struct {
        void *data;
        size_t len;
        unsigned int flags;
    } blob = {(void *)data, length, 1 /* CURL_BLOB_COPY */};
    return ((variadic_setopt)setopt)(handle, option, &blob);
}

int ccurl_easy_getinfo_string(void *getinfo, void *handle, int info, const char **value) {
    return ((variadic_getinfo)getinfo)(handle, info, value);
}

int ccurl_easy_getinfo_long(void *getinfo, void *handle, int info, long *value) {
    return ((variadic_getinfo)getinfo)(handle, info, value);
}

int ccurl_easy_getinfo_offset(void *getinfo, void *handle, int info, int64_t *value) {
    return ((variadic_getinfo)getinfo)(handle, info, value);
}

int ccurl_multi_setopt_long(void *setopt, void *multi, int option, long value) {
    return ((variadic_setopt)setopt)(multi, option, value);
}

int ccurl_name_this_thread(const char *name) {
#if defined(__APPLE__)
    return pthread_setname_np(name);
#else
    return pthread_setname_np(pthread_self(), name);
#endif
}
