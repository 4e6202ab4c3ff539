/* /proc/net/netstat and /proc/net/snmp: parse_netstat, and parse_netstat_pick, which must judge a text as
 * parse_netstat does. */
#include "fuzz.h"
#include "parse.h"

#include <errno.h>

static int on_value(void *ctx, const char *prefix, const char *name, int64_t value)
{
	size_t *n = ctx;

	(void)value;
	FUZZ_CHECK(prefix && prefix[0] && name && name[0]);
	(*n)++;
	return 0;
}

static int stop_at_third(void *ctx, const char *prefix, const char *name, int64_t value)
{
	size_t *n = ctx;

	(void)prefix, (void)name, (void)value;
	return ++*n == 3 ? 42 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct netstat_want want[] = {
		{"TcpExt", "ListenOverflows"}, {"TcpExt", "ListenDrops"}, {"Tcp", "MaxConn"},
		{"Tcp", "RetransSegs"},        {"Udp", "InErrors"},       {"IpExt", "InOctets"},
	};
	const char *buf = (const char *)data;
	int64_t vals[sizeof(want) / sizeof(want[0])];
	uint64_t found = 0;
	size_t n = 0, stopped = 0;
	int r, rp, rs;

	r = parse_netstat(buf, size, on_value, &n);
	FUZZ_CHECK(r == 0 || r == -EBADMSG);
	FUZZ_CHECK(r == 0 || n == 0); /* CB sees nothing from a text that fails */
	rp = parse_netstat_pick(buf, size, want, sizeof(want) / sizeof(want[0]), vals, &found);
	FUZZ_CHECK(rp == r);
	rs = parse_netstat(buf, size, stop_at_third, &stopped);
	FUZZ_CHECK(rs == (r == 0 && n >= 3 ? 42 : r));
	return 0;
}
