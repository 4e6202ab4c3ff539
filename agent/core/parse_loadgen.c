/*
 * parse_loadgen: the summary a load generator prints (wrk, ApacheBench), for the tuning loop's loadgen mode. See
 * parse.h.
 *
 * The output is untrusted text: lines are matched by their labels, numbers are read with their units, and
 * anything that does not look like either tool's summary is an error naming what is missing.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

#define LINE_MAX_LEN 512

/* A duration as wrk prints it ("563.00us", "4.74ms", "1.20s", "2.00m"): milliseconds, or NAN. */
static double wrk_ms(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || !isfinite(v) || v < 0)
		return NAN;
	if (strncmp(end, "us", 2) == 0)
		return v / 1000.0;
	if (strncmp(end, "ms", 2) == 0)
		return v;
	if (strncmp(end, "s", 1) == 0)
		return v * 1000.0;
	if (strncmp(end, "m", 1) == 0)
		return v * 60000.0;
	if (strncmp(end, "h", 1) == 0)
		return v * 3600000.0;
	return NAN;
}

static const char *skip_space(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/* A number after LABEL at the start of LINE (leading blanks allowed): true with *V. */
static bool labelled(const char *line, const char *label, double *v)
{
	const char *p = skip_space(line);
	char *end;
	double x;

	if (strncmp(p, label, strlen(label)) != 0)
		return false;
	p = skip_space(p + strlen(label));
	x = strtod(p, &end);
	if (end == p || !isfinite(x) || x < 0)
		return false;
	*v = x;
	return true;
}

/* The percentiles the tools print that the agent keeps. */
static void set_percentile(struct loadgen_result *r, double pct, double ms)
{
	if (pct == 50)
		r->p50_ms = ms;
	else if (pct == 90)
		r->p90_ms = ms;
	else if (pct == 99)
		r->p99_ms = ms;
}

/* One wrk line. */
static void wrk_line(const char *line, struct loadgen_result *r)
{
	const char *p = skip_space(line);
	double v;

	if (isdigit((unsigned char)*p) && strstr(p, " requests in ")) {
		char *end;

		v = strtod(p, &end);
		if (end != p && isfinite(v))
			r->requests = v;
		p = strstr(p, " requests in ") + strlen(" requests in ");
		v = wrk_ms(p);
		if (isfinite(v))
			r->duration_s = v / 1000.0;
		return;
	}
	if (labelled(line, "Requests/sec:", &v)) {
		r->rps = v;
		return;
	}
	if (labelled(line, "Non-2xx or 3xx responses:", &v)) {
		r->errors += v;
		return;
	}
	if (strncmp(p, "Socket errors:", 14) == 0) {
		unsigned long c, rd, w, t;

		if (sscanf(p, "Socket errors: connect %lu, read %lu, write %lu, timeout %lu", &c, &rd, &w, &t) == 4) {
			/* A read error is mostly wrk's view of a server closing the connection ("Connection:
			 * close" load counts one per request): kept apart from the errors that lose requests. */
			r->errors += (double)(c + w);
			r->read_errors = (double)rd;
			r->timeouts = (double)t;
		}
		return;
	}
	/* The latency distribution (--latency): "50%  563.00us". */
	if (isdigit((unsigned char)*p)) {
		char *end;
		double pct = strtod(p, &end);

		if (end != p && *end == '%')
			set_percentile(r, pct, wrk_ms(skip_space(end + 1)));
	}
}

/* One ab line. */
static void ab_line(const char *line, struct loadgen_result *r)
{
	const char *p = skip_space(line);
	double v;

	if (labelled(line, "Complete requests:", &v))
		r->requests = v;
	else if (labelled(line, "Requests per second:", &v))
		r->rps = v;
	else if (labelled(line, "Time taken for tests:", &v))
		r->duration_s = v;
	else if (labelled(line, "Failed requests:", &v))
		r->errors += v;
	else if (labelled(line, "Non-2xx responses:", &v))
		r->errors += v;
	else if (isdigit((unsigned char)*p)) {
		/* "Percentage of the requests served within a certain time (ms)": "  99%      5". */
		char *end;
		double pct = strtod(p, &end);

		if (end != p && *end == '%' && labelled(end + 1, "", &v))
			set_percentile(r, pct, v);
	}
}

int parse_loadgen(const char *buf, size_t len, struct loadgen_result *r, char *err, size_t errlen)
{
	char line[LINE_MAX_LEN];
	size_t i = 0;
	enum { TOOL_NONE, TOOL_WRK, TOOL_AB } tool = TOOL_NONE;

	memset(r, 0, sizeof(*r));
	r->rps = r->p50_ms = r->p90_ms = r->p99_ms = r->requests = r->duration_s = NAN;
	if (!buf) {
		snprintf(err, errlen, "no output");
		return -EBADMSG;
	}
	while (i < len) {
		size_t n = 0;

		while (i < len && buf[i] != '\n') {
			if (n + 1 < sizeof(line))
				line[n++] = buf[i] == '\r' || buf[i] == '\0' ? ' ' : buf[i];
			i++;
		}
		i++;
		line[n] = '\0';
		if (tool == TOOL_NONE) {
			if (strncmp(line, "Running ", 8) == 0 && strstr(line, " test @ "))
				tool = TOOL_WRK;
			else if (strncmp(line, "This is ApacheBench", 19) == 0)
				tool = TOOL_AB;
			continue;
		}
		if (tool == TOOL_WRK)
			wrk_line(line, r);
		else
			ab_line(line, r);
	}
	if (tool == TOOL_NONE) {
		snprintf(err, errlen, "not the output of wrk or ab (no \"Running ... test @\" or \"This is ApacheBench\" line)");
		return -EBADMSG;
	}
	if (!isfinite(r->rps) || !isfinite(r->requests)) {
		snprintf(err, errlen, "%s printed no %s: the run did not finish", tool == TOOL_WRK ? "wrk" : "ab",
			 !isfinite(r->rps) ? "requests per second" : "request count");
		return -EBADMSG;
	}
	r->tool = tool == TOOL_WRK ? "wrk" : "ab";
	return 0;
}
