#include <curl/curl.h>
#include <errno.h>
#include <grp.h>
#include <libgen.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"
#include "proto.h"
#include "strutil.h"
#include "termsafe.h"

#define MAX_BODY (64u << 20)

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct sbuf *b = arg;
	size_t n = size * nmemb;

	if (b->len + n > MAX_BODY)
		return 0;
	sbuf_add(b, data, n);
	return b->oom ? 0 : n;
}

/* One request to the agent; BODY NULL for a GET. The parsed JSON answer in *OUT on a 2xx. */
/*
 * Every string of V escaped for the terminal (termsafe.h), in place: each verb prints what the agent stored (an
 * operator's why, an audit row's detail, a probe's error), and one walk here covers them all. --json prints the
 * answer as JSON, whose own escapes are safe, and is left as it came.
 */
static void term_safe_json(json_t *v)
{
	const char *key;
	json_t *item;
	size_t i;

	if (json_is_string(v) && !termsafe_clean(json_string_value(v), json_string_length(v))) {
		size_t n = termsafe_escaped_size(json_string_value(v), json_string_length(v));
		char *e = malloc(n);

		if (e)
			json_string_set(v, termsafe_escape(json_string_value(v), json_string_length(v), e, n));
		free(e);
	} else if (json_is_object(v)) {
		json_object_foreach(v, key, item)
			term_safe_json(item);
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, item)
			term_safe_json(item);
	}
}

static bool in_group(gid_t gid)
{
	gid_t groups[256];
	int n = getgroups(256, groups);

	if (getegid() == gid)
		return true;
	for (int i = 0; i < n; i++)
		if (groups[i] == gid)
			return true;
	return false;
}

/*
 * Why the socket at PATH refused this user (connect() answered EACCES or EPERM): the socket's (or its directory's)
 * mode, owner and group, and who asks. Connecting to a Unix socket needs write permission on it, and search
 * permission on the directories above it.
 */
static void why_denied(const char *path, char *err, size_t errlen)
{
	const struct passwd *me = getpwuid(geteuid());
	char dir[CONFIG_PATH_MAX], grp[64], own[64], user[64];
	const char *what = path;
	struct stat st;

	/* getpwuid's answer is overwritten by the next call: copied. */
	snprintf(user, sizeof(user), "%s", me ? me->pw_name : "?");
	snprintf(dir, sizeof(dir), "%s", path);
	if (stat(path, &st) < 0) {
		what = dirname(dir);
		if (stat(what, &st) < 0) {
			snprintf(err, errlen, "cannot reach the agent at %s: permission denied (user %s cannot reach the "
				 "socket's directory)", path, user);
			return;
		}
	}
	snprintf(grp, sizeof(grp), "%s", getgrgid(st.st_gid) ? getgrgid(st.st_gid)->gr_name : "?");
	snprintf(own, sizeof(own), "%s", getpwuid(st.st_uid) ? getpwuid(st.st_uid)->pw_name : "?");
	if (!in_group(st.st_gid))
		snprintf(err, errlen, "permission denied on %s %s (mode %04o, owner %s, group %s): user %s is not in "
			 "group %s; add it (usermod -aG %s %s, then log in again) or use sudo; the agent is not the cause",
			 what == path ? "the agent's socket" : "the socket's directory", what, (unsigned)(st.st_mode & 07777),
			 own, grp, user, grp, grp, user);
	else
		snprintf(err, errlen, "permission denied on %s %s (mode %04o, owner %s, group %s): its mode gives "
			 "group %s no %s", what == path ? "the agent's socket" : "the socket's directory", what,
			 (unsigned)(st.st_mode & 07777), own, grp, grp, what == path ? "write" : "search");
}

static int request(const struct ctl *ctl, const char *path, const char *body, json_t **out, char *err, size_t errlen)
{
	char url[CONFIG_PATH_MAX + 1024], auth[600], cerr[CURL_ERROR_SIZE] = "";
	struct curl_slist *hdrs = NULL;
	struct sbuf resp;
	json_error_t jerr;
	long code = 0, os_errno = 0;
	CURLcode rc;
	CURL *h = curl_easy_init();
	json_t *j;

	if (!h)
		return -ENOMEM;
	sbuf_init(&resp);
	if (ctl->url[0]) {
		/* The agent's TCP listener: reads need no token, acts need one. */
		size_t n = strlen(ctl->url);

		snprintf(url, sizeof(url), "%.*s%s", (int)(n && ctl->url[n - 1] == '/' ? n - 1 : n), ctl->url, path);
		curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	} else {
		snprintf(url, sizeof(url), "http://localhost%s", path);
		curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, ctl->socket);
	}
	if (ctl->token[0]) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", ctl->token);
		hdrs = curl_slist_append(hdrs, auth);
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 30000L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &resp);
	if (body) {
		hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	}
	if (hdrs)
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	rc = curl_easy_perform(h);
	if (rc == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	else
		curl_easy_getinfo(h, CURLINFO_OS_ERRNO, &os_errno);
	curl_easy_cleanup(h);
	curl_slist_free_all(hdrs);
	if (rc != CURLE_OK) {
		sbuf_free(&resp);
		/* Over the socket, connect()'s errno tells a refusal of this user from an agent that is not there. */
		if (!ctl->url[0] && rc == CURLE_COULDNT_CONNECT && (os_errno == EACCES || os_errno == EPERM)) {
			why_denied(ctl->socket, err, errlen);
			return -EACCES;
		}
		if (!ctl->url[0] && rc == CURLE_COULDNT_CONNECT && (os_errno == ENOENT || os_errno == ECONNREFUSED))
			snprintf(err, errlen, "cannot reach the agent: %s %s (is ngx-autotune running? systemctl status "
				 "ngx-autotune; or its [agent] socket is elsewhere: -s, -c)",
				 os_errno == ENOENT ? "no socket at" : "nothing listens on", ctl->socket);
		else
			snprintf(err, errlen, "cannot reach the agent at %s: %s (is ngx-autotune running?)",
				 ctl->url[0] ? ctl->url : ctl->socket, cerr[0] ? cerr : curl_easy_strerror(rc));
		return rc == CURLE_COULDNT_CONNECT ? -ECONNREFUSED : -EIO;
	}
	j = json_loads(sbuf_str(&resp), 0, &jerr);
	sbuf_free(&resp);
	if (!j) {
		snprintf(err, errlen, "the agent answered HTTP %ld with a body that is not JSON: %s", code, jerr.text);
		return -EPROTO;
	}
	if (code < 200 || code > 299) {
		json_t *d = json_object_get(j, API_K_ERR_DETAIL);

		char safe[512];

		snprintf(err, errlen, "%s (HTTP %ld)", json_is_string(d) ? termsafe_escape(json_string_value(d),
			 json_string_length(d), safe, sizeof(safe)) : "error", code);
		json_decref(j);
		switch (code) {
		case 401:
		case 403: return -EACCES;
		case 404: return -ENOENT;
		case 409: return -EBUSY;
		default: return code >= 400 && code < 500 ? -EINVAL : -EPROTO;
		}
	}
	if (!ctl->json)
		term_safe_json(j);
	*out = j;
	return 0;
}

int ctl_get(const struct ctl *ctl, const char *path, json_t **out, char *err, size_t errlen)
{
	return request(ctl, path, NULL, out, err, errlen);
}

int ctl_post(const struct ctl *ctl, const char *path, json_t *body, json_t **out, char *err, size_t errlen)
{
	char *text = json_dumps(body, JSON_COMPACT);
	int r;

	if (!text)
		return -ENOMEM;
	r = request(ctl, path, text, out, err, errlen);
	free(text);
	return r;
}

int ctl_fail(const char *err, int r)
{
	fprintf(stderr, "ngxctl: %s\n", err);
	switch (r) {
	case -EACCES: return CTL_EXIT_DENIED;
	case -ENOENT: return CTL_EXIT_NOT_FOUND;
	case -EBUSY:
	case -EINVAL: return CTL_EXIT_REFUSED;
	default: return CTL_EXIT_UNREACHABLE;
	}
}

int ctl_read_token(const char *path, char *out, size_t outlen, char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	char line[512];
	int found = 0;

	if (!f) {
		int e = errno;

		snprintf(err, errlen, "token file %s: %s", path, strerror(e));
		return -e;
	}
	while (!found && fgets(line, sizeof(line), f)) {
		char *p = line, *colon, *end;

		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '#' || *p == '\n' || *p == '\0')
			continue;
		end = p + strcspn(p, " \t\r\n");
		*end = '\0';
		/* The agent's tokens file holds NAME:SECRET lines; a file of ours may hold the secret alone. */
		colon = strchr(p, ':');
		if (colon)
			p = colon + 1;
		if (!*p || strlen(p) >= outlen)
			break;
		snprintf(out, outlen, "%s", p);
		found = 1;
	}
	fclose(f);
	if (!found) {
		snprintf(err, errlen, "token file %s: no token (one line: SECRET or NAME:SECRET)", path);
		return -EINVAL;
	}
	return 0;
}

bool ctl_name_ok(const char *verb, const char *what, const char *arg)
{
	if (!arg[0] || arg[0] == '-') {
		fprintf(stderr, "ngxctl %s: '%s' is not a %s name%s (ngxctl %s --help)\n", verb, arg, what,
			arg[0] ? ": names do not start with '-'" : "", verb);
		return false;
	}
	if (strpbrk(arg, "/&#? \t") || strlen(arg) > 128) {
		fprintf(stderr, "ngxctl %s: '%s' is not a %s name: no '/', '&', '#', '?' or blank, at most 128 "
				"characters\n", verb, arg, what);
		return false;
	}
	return true;
}

void ctl_print_json(json_t *v)
{
	/* Non-ASCII as \\uXXXX: a C1 control (U+009B is a CSI on some terminals) reaches no terminal raw. */
	json_dumpf(v, stdout, JSON_INDENT(2) | JSON_ENSURE_ASCII);
	putchar('\n');
}
