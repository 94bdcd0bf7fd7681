import tempfile, sys
from pathlib import Path
from tests.nginx_lab import *
from sse_inspect import analyze
from sse_inspect.checks import run_checks
sc = {"long": BUFFERED_LONG, "gzip": GZIPPED, "chunked": CHUNKED}[sys.argv[1]]
with tempfile.TemporaryDirectory() as tmp, mitmdumps(Path(tmp)) as sp:
    r = run(sc, Path(tmp), sp)
    c = r.client
    from collections import Counter
    print(len(c.chunks), Counter(len(x.data) for x in c.chunks).most_common(5), [round(x.t,3) for x in c.chunks[:5]], c.end)
    rep = run_checks(analyze(c))
    print(rep.verdict)
    for f in rep.findings: print(f.severity, f.code, f.message, f.evidence)
