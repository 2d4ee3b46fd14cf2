#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

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

int ccurl_easy_getinfo_socket(void *getinfo, void *handle, int info, int *value) {
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

// MARK: TLS handshake watch

struct ccurl_tls_watch {
    atomic_int references;
    atomic_uint flags;
};

typedef long (*ctx_callback_ctrl_function)(void *, int, void (*)(void));
typedef long (*ctx_ctrl_function)(void *, int, long, void *);
typedef int (*ctx_set_ex_data_function)(void *, int, void *);
typedef void (*ex_free_function)(void *, void *, void *, int, long, void *);
typedef int (*get_ex_new_index_function)(int, long, void *, void *, void *, ex_free_function);

static ctx_callback_ctrl_function ctx_callback_ctrl;
static ctx_ctrl_function ctx_ctrl;
static ctx_set_ex_data_function ctx_set_ex_data;
static int watch_index = -1;

// OpenSSL's constants (ssl.h, crypto.h): stable since 1.0.
enum {
    SSL_CTRL_SET_MSG_CALLBACK = 15,
    SSL_CTRL_SET_MSG_CALLBACK_ARG = 16,
    CRYPTO_EX_INDEX_SSL_CTX = 1,
    SSL3_RT_HANDSHAKE = 22,
    HANDSHAKE_NEW_SESSION_TICKET = 4,
    HANDSHAKE_CERTIFICATE = 11,
    HANDSHAKE_CERTIFICATE_REQUEST = 13,
    HANDSHAKE_FINISHED = 20,
};

static void release_from_context(void *parent, void *pointer, void *data, int index, long argl, void *argp) {
    (void)parent, (void)data, (void)index, (void)argl, (void)argp;
    if (pointer) ccurl_tls_watch_release(pointer);
}

static void on_message(int write_p, int version, int content_type, const void *buffer, size_t length, void *ssl,
                       void *argument) {
    (void)version, (void)ssl;
    struct ccurl_tls_watch *watch = argument;
    if (!watch || content_type != SSL3_RT_HANDSHAKE || length < 1) return;
    unsigned char type = ((const unsigned char *)buffer)[0];
    if (write_p) {
        if (type == HANDSHAKE_CERTIFICATE) atomic_fetch_or(&watch->flags, CCURL_TLS_CERTIFICATE_SENT);
        return;
    }
    if (type == HANDSHAKE_CERTIFICATE_REQUEST) {
        atomic_fetch_or(&watch->flags, CCURL_TLS_CERTIFICATE_REQUESTED);
    } else if (type == HANDSHAKE_NEW_SESSION_TICKET
               || (type == HANDSHAKE_FINISHED && (atomic_load(&watch->flags) & CCURL_TLS_CERTIFICATE_SENT))) {
        atomic_fetch_or(&watch->flags, CCURL_TLS_SERVER_WENT_ON);
    }
}

int ccurl_tls_watch_setup(void *callback_ctrl, void *ctrl, void *set_ex_data, void *get_ex_new_index) {
    if (watch_index >= 0) return 1;
    if (!callback_ctrl || !ctrl || !set_ex_data || !get_ex_new_index) return 0;
    int index = ((get_ex_new_index_function)get_ex_new_index)(
        CRYPTO_EX_INDEX_SSL_CTX, 0, NULL, NULL, NULL, release_from_context);
    if (index < 0) return 0;
    ctx_callback_ctrl = (ctx_callback_ctrl_function)callback_ctrl;
    ctx_ctrl = (ctx_ctrl_function)ctrl;
    ctx_set_ex_data = (ctx_set_ex_data_function)set_ex_data;
    watch_index = index;
    return 1;
}

ccurl_tls_watch *ccurl_tls_watch_new(void) {
    struct ccurl_tls_watch *watch = malloc(sizeof *watch);
    if (!watch) return NULL;
    atomic_init(&watch->references, 1);
    atomic_init(&watch->flags, 0);
    return watch;
}

void ccurl_tls_watch_release(ccurl_tls_watch *watch) {
    if (watch && atomic_fetch_sub(&watch->references, 1) == 1) free(watch);
}

unsigned ccurl_tls_watch_flags(const ccurl_tls_watch *watch) {
    return watch ? atomic_load(&((struct ccurl_tls_watch *)watch)->flags) : 0;
}

int ccurl_tls_watch_ssl_ctx(void *curl, void *ssl_ctx, void *argument) {
    (void)curl;
    struct ccurl_tls_watch *watch = argument;
    if (!watch || !ssl_ctx || watch_index < 0) return 0;  // CURLE_OK: the connection goes on unwatched
    atomic_fetch_add(&watch->references, 1);
    if (ctx_set_ex_data(ssl_ctx, watch_index, watch) != 1) {
        ccurl_tls_watch_release(watch);
        return 0;
    }
    ctx_callback_ctrl(ssl_ctx, SSL_CTRL_SET_MSG_CALLBACK, (void (*)(void))on_message);
    ctx_ctrl(ssl_ctx, SSL_CTRL_SET_MSG_CALLBACK_ARG, 0, watch);
    return 0;
}
