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
/// `curl_easy_getinfo(handle, info, (curl_socket_t *)value)`: a socket, an `int` on POSIX systems.
int ccurl_easy_getinfo_socket(void *getinfo, void *handle, int info, int *value);
/// `curl_easy_getinfo(handle, info, (curl_off_t *)value)`
int ccurl_easy_getinfo_offset(void *getinfo, void *handle, int info, int64_t *value);
/// `curl_multi_setopt(multi, option, (long)value)`
int ccurl_multi_setopt_long(void *setopt, void *multi, int option, long value);
/// Names the calling thread, as `ps` and /proc show it (15 characters at most on Linux).
int ccurl_name_this_thread(const char *name);

// What one connection's TLS handshake showed, recorded by OpenSSL's message callback: libcurl reports a
// connection the server closed right after refusing a client certificate as a lost connection (or a broken
// pipe), the alert having been overtaken by the reset; what the handshake showed tells the two apart.
// Works with libcurl on OpenSSL (or a library with its API); the functions are libssl's and libcrypto's, found
// through libcurl's own handle at run time.

/// The server sent a CertificateRequest.
#define CCURL_TLS_CERTIFICATE_REQUESTED 1u
/// The server went on after the client's certificate: a session ticket, or (TLS 1.2) its Finished message
/// after the client's Certificate; it accepted the certificate.
#define CCURL_TLS_SERVER_WENT_ON 2u
/// The client sent its Certificate message (empty when it has none).
#define CCURL_TLS_CERTIFICATE_SENT 4u

/// One hop's record of its handshake: reference counted, shared by the transfer and the connection's SSL_CTX
/// (which may outlive the transfer: a connection stays for reuse), freed when both have let go.
typedef struct ccurl_tls_watch ccurl_tls_watch;

/// Takes OpenSSL's `SSL_CTX_callback_ctrl`, `SSL_CTX_ctrl`, `SSL_CTX_set_ex_data` and
/// `CRYPTO_get_ex_new_index`; 1 when watching handshakes works, 0 otherwise. Called once per process, before
/// any other of these functions (LibCurl's `static let`).
int ccurl_tls_watch_setup(void *ctx_callback_ctrl, void *ctx_ctrl, void *ctx_set_ex_data, void *get_ex_new_index);
/// A new record (one reference, the caller's), or NULL.
ccurl_tls_watch *ccurl_tls_watch_new(void);
/// Lets go of one reference.
void ccurl_tls_watch_release(ccurl_tls_watch *watch);
/// The `CCURL_TLS_*` bits recorded so far.
unsigned ccurl_tls_watch_flags(const ccurl_tls_watch *watch);
/// libcurl's `CURLOPT_SSL_CTX_FUNCTION`, with the hop's record as `CURLOPT_SSL_CTX_DATA`: hands the new
/// connection's SSL_CTX a reference to it and has OpenSSL report the handshake's messages there.
int ccurl_tls_watch_ssl_ctx(void *curl, void *ssl_ctx, void *watch);

// zlib, which WebSocket compression (permessage-deflate) loads at run time like libcurl: only the layout of its
// stream structure is needed here, no header and no link.

/// The layout of zlib's `z_stream` (zlib.h), unchanged since zlib 1.0: passed to `deflateInit2_` and
/// `inflateInit2_` with its size, which zlib checks against its own.
typedef struct {
    const unsigned char *next_in;
    unsigned int avail_in;
    unsigned long total_in;
    unsigned char *next_out;
    unsigned int avail_out;
    unsigned long total_out;
    const char *msg;
    void *state;
    void *zalloc;
    void *zfree;
    void *opaque;
    int data_type;
    unsigned long adler;
    unsigned long reserved;
} czlib_stream;

#endif
