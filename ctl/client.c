#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "proto.h"
#include "strutil.h"

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

int ctl_get(const struct ctl *ctl, const char *path, json_t **out, char *err, size_t errlen)
{
	char url[1024], cerr[CURL_ERROR_SIZE] = "";
	struct sbuf body;
	json_error_t jerr;
	long code = 0;
	CURLcode rc;
	CURL *h = curl_easy_init();
	json_t *j;

	if (!h)
		return -ENOMEM;
	sbuf_init(&body);
	snprintf(url, sizeof(url), "http://localhost%s", path);
	curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, ctl->socket);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 10000L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
	rc = curl_easy_perform(h);
	if (rc == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(h);
	if (rc != CURLE_OK) {
		snprintf(err, errlen, "cannot reach the agent at %s: %s (is ngx-autotune running?)", ctl->socket, cerr[0] ? cerr : curl_easy_strerror(rc));
		sbuf_free(&body);
		return rc == CURLE_COULDNT_CONNECT ? -ECONNREFUSED : -EIO;
	}
	j = json_loads(sbuf_str(&body), 0, &jerr);
	sbuf_free(&body);
	if (!j) {
		snprintf(err, errlen, "the agent answered HTTP %ld with a body that is not JSON: %s", code, jerr.text);
		return -EPROTO;
	}
	if (code != 200) {
		json_t *d = json_object_get(j, API_K_ERR_DETAIL);

		snprintf(err, errlen, "HTTP %ld: %s", code, json_is_string(d) ? json_string_value(d) : "error");
		json_decref(j);
		return code == 404 ? -ENOENT : -EPROTO;
	}
	*out = j;
	return 0;
}

void ctl_print_json(json_t *v)
{
	json_dumpf(v, stdout, JSON_INDENT(2));
	putchar('\n');
}
