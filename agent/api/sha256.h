/*
 * sha256: SHA-256 (FIPS 180-4) and base64, for the API: tokens are compared as digests (so the comparison takes
 * the same time whatever their length), and the console's Content-Security-Policy names its inline script and
 * style by their hashes. No I/O; not for anything that needs a keyed MAC.
 */
#ifndef NGXAT_SHA256_H
#define NGXAT_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN 32

/* The digest of DATA[0..LEN) into OUT. */
void sha256(const void *data, size_t len, uint8_t out[SHA256_LEN]);
/* Standard base64 (with padding) of DATA[0..LEN) into OUT of OUTLEN bytes, NUL-terminated. 0 or -ENOSPC. */
int base64_encode(const uint8_t *data, size_t len, char *out, size_t outlen);

#endif
