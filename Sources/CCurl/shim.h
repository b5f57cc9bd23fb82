#pragma once
#include <curl/curl.h>

/* curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: one typed
   wrapper per argument type. */
static inline CURLcode vox_curl_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode vox_curl_setopt_ptr(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode vox_curl_setopt_string(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode vox_curl_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
typedef size_t (*vox_curl_data_callback)(char *, size_t, size_t, void *);
static inline CURLcode vox_curl_setopt_callback(CURL *h, CURLoption o, vox_curl_data_callback f) { return curl_easy_setopt(h, o, f); }
typedef int (*vox_curl_progress_callback)(void *, curl_off_t, curl_off_t, curl_off_t, curl_off_t);
static inline CURLcode vox_curl_setopt_progress(CURL *h, vox_curl_progress_callback f) { return curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, f); }
static inline long vox_curl_response_code(CURL *h) { long c = 0; curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &c); return c; }
