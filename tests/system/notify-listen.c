/*
 * notify-listen: a test-owned NOTIFY_SOCKET. Binds a datagram socket at PATH and prints every message it receives
 * (one per line, newlines inside a message shown as '|'), until SECONDS pass or a message containing STOPPING=1
 * arrives. Used by the system tests to check what the agent tells systemd.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char buf[4096];
	time_t end;
	int fd;

	if (argc != 3 || strlen(argv[1]) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "usage: notify-listen PATH SECONDS\n");
		return 2;
	}
	strcpy(sa.sun_path, argv[1]);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	unlink(argv[1]);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("notify-listen: bind");
		return 1;
	}
	end = time(NULL) + atoi(argv[2]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (time(NULL) < end) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (poll(&p, 1, 200) <= 0)
			continue;
		n = recv(fd, buf, sizeof(buf) - 1, 0);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		for (char *c = buf; *c; c++)
			if (*c == '\n')
				*c = '|';
		printf("%s\n", buf);
		if (strstr(buf, "STOPPING=1"))
			break;
	}
	unlink(argv[1]);
	return 0;
}
