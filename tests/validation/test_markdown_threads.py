"""Markdown read by many threads at once from a fresh start: the debate page's renderer and
the reports' heading reader share one parser, and its first links may come in several
threads together (a newly started server answering a burst of page fetches)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

THREADS = 16
ATTEMPTS = 5

# Run in a fresh interpreter each time: the race is on the first links ever read.
FIRST_LINKS_IN_MANY_THREADS = textwrap.dedent(
    """
    import json, sys, threading
    sys.setswitchinterval(1e-6)
    from app.formats.markdown import nest_headings
    from app.web.render import markdown_html

    threads = int(sys.argv[1])
    start = threading.Barrier(threads)
    results, errors = {}, []

    def read(n):
        text = f"# Point {n}\\n\\nSee [source {n}](https://example.org/é/{n}) and <https://x.example/{n}>."
        start.wait()
        try:
            html = str(markdown_html(text)) if n % 2 else nest_headings(text, under=2)
            results[n] = html
        except Exception as error:
            errors.append(repr(error))

    workers = [threading.Thread(target=read, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    print(json.dumps({"errors": errors, "results": results}))
    """
)


def test_first_links_read_by_many_threads_at_once_all_render() -> None:
    for _ in range(ATTEMPTS):
        done = subprocess.run(
            [sys.executable, "-c", FIRST_LINKS_IN_MANY_THREADS, str(THREADS)],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        outcome = json.loads(done.stdout)
        assert outcome["errors"] == []
        results = {int(n): html for n, html in outcome["results"].items()}
        assert len(results) == THREADS
        for n, html in results.items():
            if n % 2:
                assert f'<a href="https://example.org/%C3%A9/{n}"' in html, html
            else:
                assert html.startswith(f"### Point {n}"), html
