#!/usr/bin/env python3
"""A strict reader of the Prometheus text exposition format 0.0.4, as the agent promises to write it.

Checks every line's grammar, HELP and TYPE once per family and before its samples, families not interleaved,
no duplicate series, escapes, values Prometheus can read, counters named *_total and never NaN or negative,
histograms complete and cumulative. Then what the caller expects: --expect FAMILY (declared, with samples),
--check 'NAME{label="value",...} OP NUMBER' (every sample of NAME with those labels, at least one, satisfies
OP; OP is one of >= <= == != > <; NUMBER may be NaN), --absent FAMILY, --since EARLIER (no counter of an
earlier scrape is above this one's).

Stricter than Prometheus where the agent's own output is concerned: no blank lines, no other comments, one space
between fields, no timestamps. Exit 0 when all holds, 1 with one line per problem otherwise, 2 for bad usage.
--selftest feeds it broken inputs and checks that each is refused.

Standard library only.
"""
import math
import re
import sys

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r"[a-zA-Z_][a-zA-Z0-9_]*"
TYPES = ("counter", "gauge", "histogram", "summary", "untyped")
RE_HELP = re.compile(r"# HELP (%s) (.*)\Z" % NAME, re.S)
RE_TYPE = re.compile(r"# TYPE (%s) (\S+)\Z" % NAME)
RE_SAMPLE_NAME = re.compile(r"(%s)" % NAME)
RE_LABEL_NAME = re.compile(LABEL)
RE_HELP_TEXT = re.compile(r"([^\\\n]|\\[\\n])*\Z")
RE_FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\Z")
OPS = {
    ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b,
    "==": lambda a, b: (math.isnan(a) and math.isnan(b)) or a == b,
    "!=": lambda a, b: not ((math.isnan(a) and math.isnan(b)) or a == b),
    ">": lambda a, b: a > b,
    "<": lambda a, b: a < b,
}


class Problem(Exception):
    pass


def parse_value(s):
    """A float as Go's ParseFloat reads what Prometheus writes: NaN, +Inf, -Inf, decimals."""
    if s == "NaN":
        return math.nan
    if s in ("+Inf", "Inf"):
        return math.inf
    if s == "-Inf":
        return -math.inf
    if not RE_FLOAT.match(s):
        raise Problem("value %r is not a number Prometheus reads" % s)
    return float(s)


def unescape_label(s, pos):
    """Read a quoted label value starting after its opening quote at S[POS]; return (value, index after it)."""
    out = []
    i = pos
    while i < len(s):
        c = s[i]
        if c == "\\":
            if i + 1 >= len(s):
                raise Problem("label value ends in a lone backslash")
            e = s[i + 1]
            if e == "\\":
                out.append("\\")
            elif e == '"':
                out.append('"')
            elif e == "n":
                out.append("\n")
            else:
                raise Problem("label value has an unknown escape \\%s" % e)
            i += 2
        elif c == '"':
            return "".join(out), i + 1
        elif c == "\n":
            raise Problem("raw newline in a label value")
        else:
            out.append(c)
            i += 1
    raise Problem("label value not closed")


def parse_sample(line):
    """(name, {label: value}, value) of a sample line."""
    m = RE_SAMPLE_NAME.match(line)
    if not m:
        raise Problem("not a metric name at the start of a sample")
    name = m.group(1)
    i = m.end()
    labels = {}
    if i < len(line) and line[i] == "{":
        i += 1
        if i < len(line) and line[i] == "}":
            raise Problem("empty label braces")
        while True:
            lm = RE_LABEL_NAME.match(line, i)
            if not lm:
                raise Problem("bad label name at column %d" % (i + 1))
            lname = lm.group(0)
            if lname.startswith("__"):
                raise Problem("reserved label name %s" % lname)
            i = lm.end()
            if line[i:i + 2] != '="':
                raise Problem("label %s: expected =\" after the name" % lname)
            value, i = unescape_label(line, i + 2)
            if lname in labels:
                raise Problem("label %s repeated" % lname)
            labels[lname] = value
            if i < len(line) and line[i] == ",":
                i += 1
                if i < len(line) and line[i] == "}":
                    raise Problem("trailing comma in labels")
                continue
            if i < len(line) and line[i] == "}":
                i += 1
                break
            raise Problem("expected , or } after label %s" % lname)
    rest = line[i:]
    if not rest.startswith(" ") or rest.startswith("  "):
        raise Problem("expected one space before the value")
    fields = rest[1:].split(" ")
    if len(fields) != 1:
        raise Problem("extra fields after the value (timestamps are not written by the agent)")
    return name, labels, parse_value(fields[0])


def family_of(name, families):
    """The declared family a sample name belongs to, and its suffix."""
    if name in families and families[name]["type"] not in ("histogram", "summary"):
        return name, ""
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix):
            base = name[: -len(suffix)]
            f = families.get(base)
            if f and (f["type"] == "histogram" or (f["type"] == "summary" and suffix != "_bucket")):
                return base, suffix
    if name in families and families[name]["type"] == "summary":
        return name, ""
    raise Problem("sample %s belongs to no family declared with TYPE before it" % name)


def check_histograms(families, samples):
    for fname, f in families.items():
        if f["type"] != "histogram":
            continue
        groups = {}
        for name, labels, value, lineno in samples:
            if not name.startswith(fname + "_"):
                continue
            key = tuple(sorted((k, v) for k, v in labels.items() if k != "le"))
            g = groups.setdefault(key, {"buckets": [], "sum": None, "count": None})
            if name == fname + "_bucket":
                g["buckets"].append((parse_value(labels["le"]), value, lineno))
            elif name == fname + "_sum":
                g["sum"] = value
            elif name == fname + "_count":
                g["count"] = value
        for key, g in groups.items():
            where = "%s%s" % (fname, dict(key) if key else "")
            if g["sum"] is None or g["count"] is None:
                raise Problem("histogram %s lacks _sum or _count" % where)
            b = g["buckets"]
            if not b or b[-1][0] != math.inf:
                raise Problem("histogram %s: the last bucket is not le=\"+Inf\"" % where)
            for (le0, v0, _), (le1, v1, n1) in zip(b, b[1:]):
                if not le1 > le0:
                    raise Problem("line %d: histogram %s: le not increasing" % (n1, where))
                if v1 < v0:
                    raise Problem("line %d: histogram %s: bucket counts not cumulative" % (n1, where))
            if b[-1][1] != g["count"]:
                raise Problem("histogram %s: +Inf bucket %g != _count %g" % (where, b[-1][1], g["count"]))


def parse(text):
    """Families {name: {type, help, samples}} and samples [(name, labels, value, lineno)]; raises Problem."""
    if not text:
        raise Problem("empty exposition")
    if not text.endswith("\n"):
        raise Problem("the last line does not end with a newline")
    if "\r" in text:
        raise Problem("carriage return in the text")
    families, samples, series = {}, [], set()
    current = None
    for lineno, line in enumerate(text[:-1].split("\n"), 1):
        try:
            if line == "":
                raise Problem("blank line")
            if line.startswith("#"):
                m = RE_HELP.match(line)
                if m:
                    name, doc = m.groups()
                    if not RE_HELP_TEXT.match(doc):
                        raise Problem("HELP of %s has an escape other than \\\\ or \\n" % name)
                    f = families.setdefault(name, {"type": None, "help": None, "samples": 0})
                    if f["help"] is not None:
                        raise Problem("second HELP for %s" % name)
                    if f["samples"]:
                        raise Problem("HELP for %s after its samples" % name)
                    f["help"] = doc
                    current = name  # a family's samples follow its HELP and TYPE, before the next HELP
                    continue
                m = RE_TYPE.match(line)
                if m:
                    name, typ = m.groups()
                    if typ not in TYPES:
                        raise Problem("unknown type %s" % typ)
                    f = families.setdefault(name, {"type": None, "help": None, "samples": 0})
                    if f["type"] is not None:
                        raise Problem("second TYPE for %s" % name)
                    if f["samples"]:
                        raise Problem("TYPE for %s after its samples" % name)
                    if f["help"] is None:
                        raise Problem("TYPE for %s before its HELP" % name)
                    f["type"] = typ
                    if (typ == "counter") != name.endswith("_total"):
                        raise Problem("%s %s: counters, and only counters, end in _total" % (typ, name))
                    continue
                raise Problem("a comment that is neither HELP nor TYPE")
            name, labels, value = parse_sample(line)
            fname, suffix = family_of(name, families)
            f = families[fname]
            if fname != current:
                raise Problem("sample of %s inside family %s" % (fname, current))
            f["samples"] += 1
            key = (name, tuple(sorted(labels.items())))
            if key in series:
                raise Problem("duplicate series %s%s" % (name, labels or ""))
            series.add(key)
            if suffix == "_bucket" and "le" not in labels:
                raise Problem("bucket without le")
            if "le" in labels and suffix != "_bucket":
                raise Problem("le label outside a histogram bucket")
            if "quantile" in labels and f["type"] != "summary":
                raise Problem("quantile label outside a summary")
            if f["type"] == "counter" or suffix in ("_bucket", "_count"):
                if math.isnan(value) or value < 0:
                    raise Problem("%s is %s: counts are never NaN or negative" % (name, value))
            samples.append((name, labels, value, lineno))
        except Problem as e:
            raise Problem("line %d: %s: %s" % (lineno, e, line[:120]))
    for name, f in families.items():
        if f["type"] is None:
            raise Problem("family %s has HELP but no TYPE" % name)
    check_histograms(families, samples)
    return families, samples


RE_SELECTOR = re.compile(r"\s*(%s)(\{(.*)\})?\s*(>=|<=|==|!=|>|<)\s*(\S+)\s*\Z" % NAME)


def check_expectation(expr, samples):
    m = RE_SELECTOR.match(expr)
    if not m:
        raise Problem("bad --check %r" % expr)
    name, _, inner, op, number = m.groups()
    want = {}
    if inner:
        try:
            _, want, _ = parse_sample("x{%s} 0" % inner)
        except Problem as e:
            raise Problem("bad --check %r: %s" % (expr, e))
    ref = parse_value(number)
    chosen = [s for s in samples if s[0] == name and all(s[1].get(k) == v for k, v in want.items())]
    if not chosen:
        raise Problem("--check %s: no such sample" % expr)
    for n, labels, value, lineno in chosen:
        if not OPS[op](value, ref):
            raise Problem("--check %s: line %d has %s" % (expr, lineno, value))


def counters(families, samples):
    """{(name, labels): value} of every counter and histogram count."""
    out = {}
    for name, labels, value, _ in samples:
        base = name
        for suffix in ("_bucket", "_count"):
            if name.endswith(suffix) and families.get(name[: -len(suffix)], {}).get("type") == "histogram":
                base = name[: -len(suffix)]
        if families.get(base, {}).get("type") in ("counter", "histogram") and not name.endswith("_sum"):
            out[(name, tuple(sorted(labels.items())))] = value
    return out


def run(text, expects=(), checks=(), absents=(), since=None):
    """Problems found (empty when all holds) and a summary line. SINCE: an earlier scrape's text, whose counters
    must not be above this one's (the agent did not restart in between)."""
    try:
        families, samples = parse(text)
    except Problem as e:
        return [str(e)], ""
    problems = []
    if since is not None:
        try:
            old = counters(*parse(since))
        except Problem as e:
            return ["--since: the earlier scrape: %s" % e], ""
        now = counters(families, samples)
        for key, v in sorted(old.items()):
            if key in now and now[key] < v:
                problems.append("counter %s%s went down: %s, then %s" % (key[0], dict(key[1]) or "", v, now[key]))
    for fam in expects:
        if fam not in families or not families[fam]["samples"]:
            problems.append("--expect %s: family missing or without samples" % fam)
    for fam in absents:
        if fam in families:
            problems.append("--absent %s: family present" % fam)
    for expr in checks:
        try:
            check_expectation(expr, samples)
        except Problem as e:
            problems.append(str(e))
    return problems, "%d families, %d samples" % (len(families), len(samples))


GOOD = (
    "# HELP a_total A \\\\ counter.\n# TYPE a_total counter\na_total{x=\"q\\\"\\n\\\\\"} 3\na_total 0\n"
    "# HELP g G.\n# TYPE g gauge\ng NaN\ng{cpu=\"0\"} -Inf\n"
    "# HELP n N.\n# TYPE n gauge\nn NaN\n"
    "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"0.1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 0.3\nh_count 2\n"
)
BAD = [
    ("no final newline", GOOD[:-1], "does not end with a newline"),
    ("blank line", GOOD + "\n", "blank line"),
    ("other comment", "# hello\n" + GOOD, "neither HELP nor TYPE"),
    ("sample before TYPE", "x 1\n" + GOOD, "no family declared"),
    ("TYPE without HELP", "# TYPE z gauge\nz 1\n", "before its HELP"),
    ("HELP without TYPE", GOOD + "# HELP z z\n", "HELP but no TYPE"),
    ("second HELP", GOOD.replace("# TYPE g gauge\n", "# HELP g again\n# TYPE g gauge\n"), "second HELP"),
    ("second TYPE", GOOD.replace("# TYPE g gauge\n", "# TYPE g gauge\n# TYPE g gauge\n"), "second TYPE"),
    ("unknown type", GOOD.replace("# TYPE g gauge", "# TYPE g meter"), "unknown type"),
    ("family repeated", GOOD + "# HELP g G.\n# TYPE g gauge\ng{cpu=\"1\"} 1\n", "second HELP"),
    ("interleaved", GOOD + "g 2\n", "inside family"),
    ("duplicate series", GOOD.replace("g NaN\n", "g NaN\ng 1\n"), "duplicate series"),
    ("duplicate series, labels reordered",
     "# HELP d D.\n# TYPE d gauge\nd{a=\"1\",b=\"2\"} 1\nd{b=\"2\",a=\"1\"} 1\n", "duplicate series"),
    ("counter without _total", "# HELP c C.\n# TYPE c counter\nc 1\n", "end in _total"),
    ("gauge with _total", "# HELP c_total C.\n# TYPE c_total gauge\nc_total 1\n", "end in _total"),
    ("counter NaN", GOOD.replace("a_total 0", "a_total NaN"), "never NaN"),
    ("counter negative", GOOD.replace("a_total 0", "a_total -1"), "never NaN or negative"),
    ("bad value", GOOD.replace("g NaN", "g nan"), "not a number"),
    ("hex value", GOOD.replace("g NaN", "g 0x10"), "not a number"),
    ("timestamp", GOOD.replace("g NaN", "g 1 1700000000000"), "extra fields"),
    ("two spaces", GOOD.replace("g NaN", "g  1"), "one space"),
    ("bad escape", GOOD.replace("x=\"q", "x=\"\\t"), "unknown escape"),
    ("unclosed label", GOOD.replace("a_total{x=\"q\\\"\\n\\\\\"} 3", "a_total{x=\"q} 3"), "not closed"),
    ("bad label name", GOOD.replace("{cpu=", "{0cpu="), "bad label name"),
    ("reserved label", GOOD.replace("{cpu=", "{__cpu="), "reserved"),
    ("repeated label", GOOD.replace("{cpu=\"0\"}", "{cpu=\"0\",cpu=\"1\"}"), "repeated"),
    ("trailing comma", GOOD.replace("{cpu=\"0\"}", "{cpu=\"0\",}"), "trailing comma"),
    ("empty braces", GOOD.replace("g{cpu=\"0\"}", "g{}"), "empty label braces"),
    ("le on a gauge", GOOD.replace("{cpu=", "{le="), "le label outside"),
    ("quantile on a gauge", GOOD.replace("{cpu=", "{quantile="), "quantile label outside"),
    ("bucket not cumulative", GOOD.replace("h_bucket{le=\"0.1\"} 1", "h_bucket{le=\"0.1\"} 3"), "not cumulative"),
    ("no +Inf bucket", GOOD.replace("h_bucket{le=\"+Inf\"} 2\n", ""), "+Inf"),
    ("+Inf != count", GOOD.replace("h_count 2", "h_count 5"), "!= _count"),
    ("no _sum", GOOD.replace("h_sum 0.3\n", ""), "lacks _sum"),
    ("HELP with a bad escape", GOOD.replace("A \\\\ counter", "A \\t counter"), "escape other than"),
]


def selftest():
    problems, _ = run(GOOD, expects=["a_total", "h"], checks=['a_total{x="q\\"\\n\\\\"} == 3', "n == NaN",
                                                             'g{cpu="0"} < 0', "h_count >= 2"])
    if problems:
        print("selftest: the good text was refused: %s" % problems)
        return 1
    failed = 0
    for what, text, want in BAD:
        problems, _ = run(text)
        if not problems or want not in problems[0]:
            print("selftest: %s: got %s, want a problem saying %r" % (what, problems or "no problem", want))
            failed += 1
    for what, kwargs, want in [
        ("expect missing", {"expects": ["nope"]}, "--expect nope"),
        ("absent present", {"absents": ["g"]}, "--absent g"),
        ("check false", {"checks": ["a_total >= 1"]}, "line"),
        ("check no sample", {"checks": ['g{cpu="9"} == 1']}, "no such sample"),
        ("check bad", {"checks": ["g ~ 1"]}, "bad --check"),
        ("counter went down", {"since": GOOD.replace("a_total 0", "a_total 1")}, "went down"),
        ("histogram count went down", {"since": GOOD.replace("h_count 2", "h_count 3").replace(
            "le=\"+Inf\"} 2", "le=\"+Inf\"} 3")}, "went down"),
    ]:
        problems, _ = run(GOOD, **kwargs)
        if not problems or want not in problems[0]:
            print("selftest: %s: got %s, want %r" % (what, problems or "no problem", want))
            failed += 1
    print("selftest: %d of %d refusals right" % (len(BAD) + 7 - failed, len(BAD) + 7))
    return 1 if failed else 0


def main(argv):
    expects, checks, absents, path, since = [], [], [], None, None
    it = iter(argv)
    for a in it:
        if a == "--selftest":
            return selftest()
        if a == "--since":
            v = next(it, None)
            if v is None:
                print("promparse: --since needs a file", file=sys.stderr)
                return 2
            since = open(v, "rb").read().decode("utf-8", "replace")
            continue
        if a in ("--expect", "--check", "--absent"):
            v = next(it, None)
            if v is None:
                print("promparse: %s needs an argument" % a, file=sys.stderr)
                return 2
            {"--expect": expects, "--check": checks, "--absent": absents}[a].append(v)
        elif path is None:
            path = a
        else:
            print("usage: promparse.py [--expect F]... [--check EXPR]... [--absent F]... [--since OLD] [FILE|-]",
                  file=sys.stderr)
            return 2
    raw = sys.stdin.buffer.read() if path in (None, "-") else open(path, "rb").read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        print("promparse: not UTF-8: %s" % e)
        return 1
    problems, summary = run(text, expects, checks, absents, since)
    for p in problems:
        print("promparse: %s" % p)
    if problems:
        return 1
    print("promparse: %s, all checks hold" % summary)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
