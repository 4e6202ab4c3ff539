/* parse_accesslog.c a second time, on its portable word-at-a-time scan (PARSE_NO_SIMD) and under other names, so
 * that fuzz_accesslog holds both and can require that they agree (test_parse_nginx_nosimd runs the unit tests on
 * this path; the fuzzer compares the two on every line it makes). */
#define PARSE_NO_SIMD 1
#define parse_access_line parse_access_line_portable
#define parse_access_upstreams parse_access_upstreams_portable
#include "core/parse_accesslog.c"
