/* The host texts the doctor reads (parse_host.c): /proc/PID/limits, /proc/net/dev, /proc/meminfo, the THP mode, and
 * an nginx master's process title. */
#include "fuzz.h"
#include "parse.h"

#include <errno.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct netdev_row rows[64];
	const char *buf = (const char *)data;
	char mode[16], conf[256], prefix[256], *title;
	int64_t soft, hard;
	uint64_t kb;
	size_t n = SIZE_MAX;
	int r;

	r = parse_limits_nofile(buf, size, &soft, &hard);
	FUZZ_CHECK(r == 0 || r == -EBADMSG);
	r = parse_netdev(buf, size, rows, 64, &n);
	FUZZ_CHECK(r == 0 || r == -EBADMSG || r == -E2BIG);
	if (r == 0) {
		FUZZ_CHECK(n <= 64);
		for (size_t i = 0; i < n; i++)
			FUZZ_CHECK(memchr(rows[i].name, '\0', sizeof(rows[i].name)) != NULL);
	}
	r = parse_meminfo_total(buf, size, &kb);
	FUZZ_CHECK(r == 0 || r == -EBADMSG);
	r = parse_thp_mode(buf, size, mode, sizeof(mode));
	FUZZ_CHECK(r == 0 || r == -EBADMSG);
	if (r == 0)
		FUZZ_CHECK(strnlen(mode, sizeof(mode)) < sizeof(mode));

	title = fuzz_string(data, size);
	if (!title)
		return 0;
	r = parse_nginx_master_title(title, conf, sizeof(conf), prefix, sizeof(prefix));
	FUZZ_CHECK(r == 0 || r == -EINVAL || r == -EBADMSG || r == -ENAMETOOLONG);
	if (r == 0)
		FUZZ_CHECK(strnlen(conf, sizeof(conf)) < sizeof(conf) && strnlen(prefix, sizeof(prefix)) < sizeof(prefix));
	free(title);
	return 0;
}
