/* agent.conf (common/config.c through inih). config_load reads a file by name, so the input is written to a memfd
 * and loaded as /proc/self/fd/N: the same path through fopen and inih's stream reader as a file on disk. */
#include "build-config.h"

#include "fuzz.h"
#include "config.h"

#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

static int fd = -1;
static char path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fd = memfd_create("fuzz-agent.conf", MFD_CLOEXEC);
	if (fd < 0) {
		perror("memfd_create");
		abort();
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct config cfg;
	char err[1024];
	int r;

	if (ftruncate(fd, 0) < 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size)) {
		perror("memfd write");
		abort();
	}
	memset(err, 'x', sizeof(err));
	r = config_load(path, true, &cfg, err, sizeof(err));
	FUZZ_CHECK(r <= 0);
	if (r < 0)
		FUZZ_CHECK(memchr(err, '\0', sizeof(err)) != NULL && strncmp(err, path, strlen(path)) == 0);
	if (r == 0) {
		FUZZ_CHECK(memchr(cfg.root, '\0', sizeof(cfg.root)) && memchr(cfg.mode, '\0', sizeof(cfg.mode)));
		FUZZ_CHECK(memchr(cfg.api_listen, '\0', sizeof(cfg.api_listen)) != NULL);
		FUZZ_CHECK(memchr(cfg.socket_group, '\0', sizeof(cfg.socket_group)) != NULL);
	}
	return 0;
}
