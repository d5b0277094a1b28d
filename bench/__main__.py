"""``python -m bench``: start the fake providers and the real app, run the scenarios, print
the figures beside their targets and write them to ``bench/results/<timestamp>.json``.

``--cluster W`` runs the same scenarios on two web nodes and W workers over PostgreSQL and
Redis (``bench.cluster``); ``--compare`` first runs the latency and lifecycle scenarios (those
of them chosen) on the in-process stack too, so the table can set one beside the other.

Everything listens on 127.0.0.1, every loop is bounded in count and in time, and the child
processes are stopped however the run ends (Ctrl-C included).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import shutil
import signal
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app import collector
from bench import clients, processes, scenarios
from bench.clients import DUEL_PROVIDERS
from bench.fake_providers import PROVIDERS, Pace, paces_from, parse_pace, realistic_paces
from bench.hotspots import summarize
from bench.report import repeated_comparison, repeated_table, table, write_json
from bench.stack import Stack, StackOptions

if TYPE_CHECKING:
    from bench.cluster import ClusterOptions

SCENARIOS = ("history", "overhead", "latency", "lifecycle", "memory", "scale")
# The latency scenario's providers: one token per wire event at 50 tokens/s from the first
# byte, replies of 48 tokens (about one second each).
LATENCY_PACE = Pace(first_token_delay=0.0, tokens_per_second=50.0, tokens_per_chunk=1)
LATENCY_TOKENS = 48
# The lifecycle scenario's providers: replies of three tokens sent at once, so that a
# debate's cost besides its tokens is what is measured.
LIFECYCLE_PACE = Pace(first_token_delay=0.0, tokens_per_second=1000.0, tokens_per_chunk=1)
LIFECYCLE_TOKENS = 3
RESULTS_DIR = Path(__file__).resolve().parent / "results"


@dataclass(frozen=True)
class Plan:
    """How big each scenario is: the full run, or ``--quick`` for a smoke run."""

    tokens: int
    default_paces: dict[str, Pace]
    history_debates: int
    history_requests: int
    latency_debates: int
    latency_viewers: int
    latency_window: float
    lifecycle_debates: int
    lifecycle_batches: int
    memory_debates: int
    memory_viewers: int
    scale_steps: tuple[int, ...]
    warmup: float
    window: float
    max_seconds: float


FULL = Plan(
    tokens=100,
    default_paces=realistic_paces(0.5, 50.0),
    history_debates=10_000,
    history_requests=1_000,
    latency_debates=50,
    latency_viewers=3,
    latency_window=20.0,
    lifecycle_debates=50,
    lifecycle_batches=4,
    memory_debates=100,
    memory_viewers=4,
    scale_steps=(25, 50, 100, 200, 300, 400, 500, 600),
    warmup=5.0,
    window=15.0,
    max_seconds=900.0,
)
QUICK = Plan(
    tokens=20,
    default_paces=realistic_paces(0.2, 50.0),
    history_debates=1_000,
    history_requests=200,
    latency_debates=10,
    latency_viewers=3,
    latency_window=15.0,
    lifecycle_debates=10,
    lifecycle_batches=1,
    memory_debates=10,
    memory_viewers=3,
    scale_steps=(10, 25),
    warmup=2.0,
    window=4.0,
    max_seconds=150.0,
)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description=(
            "Benchmark the whole Argue app: uvicorn serving app.web.app:create_app against the "
            "wire-level fake providers (separate processes, 127.0.0.1 only), driven over its "
            "JSON API and watched by real SSE clients. Prints a table with PASS/MISS against "
            "the targets and writes JSON to bench/results/<timestamp>.json."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="a small smoke run (~1 minute)")
    parser.add_argument(
        "--only",
        action="append",
        choices=SCENARIOS,
        help="run only these scenarios (repeatable); default: all",
    )
    parser.add_argument("--tokens", type=int, help="tokens in every reply (full 100, quick 20)")
    parser.add_argument(
        "--pace",
        type=parse_pace,
        action="append",
        default=[],
        metavar="PROVIDER=DELAY:RATE[:CHUNK]",
        help="first-token delay (s), tokens/s and tokens per wire chunk of a provider's seats, "
        "e.g. anthropic=0.8:40:3, or all=0.5:50:1 for one token per chunk everywhere (the worst "
        "case); default full 0.5:50 and quick 0.2:50, chunked as each API streams (anthropic 3, "
        "gemini 10, openai 1); repeatable",
    )
    parser.add_argument(
        "--duel-providers",
        type=duel_providers,
        default=DUEL_PROVIDERS,
        metavar="A,B",
        help="the providers of a duel's two seats (default anthropic,gemini), e.g. openai,openai",
    )
    parser.add_argument("--scale-steps", help="comma-separated debate counts for the ladder")
    parser.add_argument("--scale-viewers", type=int, default=2, help="viewers per duel (scale)")
    parser.add_argument("--scale-rounds", type=int, default=8, help="rounds of each scale duel")
    parser.add_argument(
        "--p99-limit-ms", type=float, default=250.0, help="a scale step passes under this p99"
    )
    parser.add_argument("--window", type=float, help="measuring window of a scale step (s)")
    parser.add_argument(
        "--latency-debates", type=_at_least_one, help="duels in the latency scenario (full 50)"
    )
    parser.add_argument(
        "--latency-viewers", type=_at_least_one, help="viewers per latency duel (full 3)"
    )
    parser.add_argument(
        "--latency-rounds",
        type=_at_least_one,
        help="rounds of each latency duel (default 4 when ended debates are replaced, so "
        "debates end and start inside the window; 8 otherwise, so none ends)",
    )
    parser.add_argument(
        "--latency-window",
        type=float,
        help="measuring window of the latency scenario (s; full 20, quick 15)",
    )
    parser.add_argument(
        "--spread-starts",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="spread a load's debate starts over one provider call instead of starting them "
        "all at once (default: at once for latency, spread for scale)",
    )
    parser.add_argument(
        "--replace-ended",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="when a debate ends, start a new duel with its viewers at once, so the load keeps "
        "its debates running and they end and start throughout the window (default: on for "
        "latency, off for scale)",
    )
    parser.add_argument("--history-debates", type=int, help="stored debates (full 10000)")
    parser.add_argument("--max-seconds", type=float, help="stop starting new steps after this")
    parser.add_argument(
        "--profile",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="run py-spy on the app during one extra scale step (default: on in full mode)",
    )
    parser.add_argument(
        "--profile-debates",
        type=int,
        help="duels in the profiled step (default: largest passing, <=200)",
    )
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    parser.add_argument(
        "--provider-worker",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="set ARGUE_PROVIDER_WORKER=1 or 0 for the app (default: leave the app's own "
        "default, what a user who sets nothing gets); the worker's CPU counts as the app's",
    )
    parser.add_argument(
        "--viewer-stream",
        choices=("page", "json"),
        default="page",
        help="the live stream the viewers watch: the page's HTML fragments (what a browser "
        "gets) or the JSON API's events",
    )
    parser.add_argument(
        "--keep-home", action="store_true", help="keep the temporary data folder and logs"
    )
    cluster = parser.add_argument_group(
        "cluster",
        "two web nodes and W `argue worker` processes on a throwaway PostgreSQL database and "
        "a Redis key prefix, both removed afterwards",
    )
    cluster.add_argument(
        "--cluster",
        type=_at_least_one,
        metavar="W",
        help="run the scenarios on the cluster with W workers instead of the in-process app",
    )
    cluster.add_argument(
        "--compare",
        action="store_true",
        help="with --cluster: run the latency and lifecycle scenarios (those chosen) on the "
        "in-process app first, to compare",
    )
    cluster.add_argument(
        "--repeat",
        type=_at_least_one,
        default=1,
        metavar="N",
        help="with --compare: N pairs of runs (in-process, then the cluster), each with its own "
        "results file; the Redis latency target is then judged on the median difference",
    )
    cluster.add_argument(
        "--worker-concurrency",
        type=_at_least_one,
        help="debates each worker runs at once (default: 1.25 x the largest step / W)",
    )
    cluster.add_argument(
        "--postgres-url",
        default="postgresql://postgres@127.0.0.1:5432/postgres",
        help="a PostgreSQL database whose user may create databases: the run's is made beside it",
    )
    cluster.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    cluster.add_argument(
        "--stream-tap",
        action="store_true",
        help="with --cluster: also time each token to its debate's Redis stream (the workers' "
        "side of the latency), from a reader of the bench's own that takes a little CPU",
    )
    args = parser.parse_args(argv)
    if args.repeat > 1 and not (args.cluster and args.compare):
        parser.error("--repeat needs --cluster and --compare: it repeats the comparison")
    return args


def duel_providers(text: str) -> tuple[str, str]:
    names = tuple(name.strip() for name in text.split(","))
    if len(names) != 2 or not set(names) <= set(PROVIDERS):
        raise argparse.ArgumentTypeError(
            f"expected two of {', '.join(PROVIDERS)} separated by a comma, got {text!r}"
        )
    return names[0], names[1]


def _at_least_one(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


async def run(args: argparse.Namespace, plan: Plan, stack: Stack, stamp: str) -> dict[str, Any]:
    chosen = set(args.only or SCENARIOS)
    deadline = time.monotonic() + (args.max_seconds or plan.max_seconds)
    paces = stack.options.paces
    tokens = stack.options.tokens
    window = args.window or plan.window
    result: dict[str, Any] = {}

    # The viewers' samples are taken on this process's clock: its own collector must not
    # pause it (a full collection here took 232 ms after a cluster's seeding), or the
    # pause shows as the app's latency. The app's own discipline, for the same reason.
    async with (
        collector.pauses_kept_short(),
        clients.client() as http,
        clients.viewer_session() as watchers,
    ):
        if "history" in chosen:
            _say(f"history page over {stack.options.history_debates:,} stored debates")
            result["history"] = await scenarios.history_page(
                stack, http, requests=plan.history_requests, concurrency=4
            )
        if "overhead" in chosen:
            # The app's first debates pay one-off costs (SDK clients, lazy imports): measured
            # apart, as the cold start, before the steady-state figures.
            for key, fmt, rounds in (
                ("overhead_cold", "duel", 1),
                ("overhead_cold", "panel", 1),
                ("overhead", "duel", 4),
                ("overhead", "panel", 1),
            ):
                _say(f"{key.replace('_', ' ')}: one {rounds}-round {fmt} alone")
                figures = await scenarios.overhead(
                    stack,
                    http,
                    watchers,
                    format=fmt,
                    rounds=rounds,
                    paces=paces,
                    tokens=tokens,
                    limit=300,
                )
                result.setdefault(key, []).append(figures)
        if "memory" in chosen:  # before the load: it leaves the allocator's arenas grown
            _say(f"memory: {plan.memory_debates} debates x {plan.memory_viewers} viewers")
            result["memory"] = await scenarios.memory(
                stack,
                http,
                watchers,
                debates=plan.memory_debates,
                viewers=plan.memory_viewers,
                tokens=tokens,
                limit=60,
            )
            await scenarios.app_idle(stack, http)
        if "latency" in chosen:
            # The hardest steady load a user meets: every token its own wire event, no
            # first-token wait, short replies and the next call at once; all debates
            # started at once, and each one that ends replaced by a new one (its final page,
            # a new debate, new viewers), as an outside harness drives the app.
            shape = latency_shape(args, plan)
            _say(
                f"latency: {shape.debates} duels x {shape.viewers} viewers, "
                f"{shape.rounds} rounds, {LATENCY_TOKENS}-token replies, one token per event, "
                f"{'spread' if shape.spread_starts else 'simultaneous'} starts, ended debates "
                f"{'replaced' if shape.replace_ended else 'not replaced'}"
            )
            result["latency"] = await scenarios.load(
                stack,
                http,
                watchers,
                shape,
                paces=dict.fromkeys(paces, LATENCY_PACE),
                tokens=LATENCY_TOKENS,
            )
            await scenarios.app_idle(stack, http)
        if "lifecycle" in chosen:
            _say(
                f"lifecycle: {plan.lifecycle_batches} batches of {plan.lifecycle_debates} "
                f"one-round duels x {plan.latency_viewers} viewers, {LIFECYCLE_TOKENS}-token "
                "replies"
            )
            result["lifecycle"] = await scenarios.lifecycle(
                stack,
                http,
                watchers,
                debates=plan.lifecycle_debates,
                viewers=plan.latency_viewers,
                batches=plan.lifecycle_batches,
                paces=dict.fromkeys(paces, LIFECYCLE_PACE),
                tokens=LIFECYCLE_TOKENS,
                limit=120,
            )
            await scenarios.app_idle(stack, http)
        if "scale" in chosen:
            result["scale"] = await _scale(
                args, plan, stack, http, watchers, deadline, window, stamp
            )
    return result


def latency_shape(args: argparse.Namespace, plan: Plan) -> scenarios.LoadShape:
    """By default all duels start at once and an ended one is replaced at once, with 4
    rounds (about 13 s a duel at this pace) and a 20 s window: at least one turnover of
    every debate inside it. Without replacement, 8 rounds: none ends inside the window."""
    replace = True if args.replace_ended is None else args.replace_ended
    return scenarios.LoadShape(
        debates=args.latency_debates or plan.latency_debates,
        viewers=args.latency_viewers or plan.latency_viewers,
        rounds=args.latency_rounds or (4 if replace else 8),
        warmup=plan.warmup,
        window=args.latency_window or plan.latency_window,
        spread_starts=False if args.spread_starts is None else args.spread_starts,
        replace_ended=replace,
    )


def _scale_shape(
    args: argparse.Namespace, debates: int, warmup: float, window: float
) -> scenarios.LoadShape:
    return scenarios.LoadShape(
        debates,
        args.scale_viewers,
        args.scale_rounds,
        warmup,
        window,
        spread_starts=True if args.spread_starts is None else args.spread_starts,
        replace_ended=bool(args.replace_ended),
    )


async def _scale(
    args: argparse.Namespace,
    plan: Plan,
    stack: Stack,
    http: Any,
    watchers: Any,
    deadline: float,
    window: float,
    stamp: str,
) -> dict[str, Any]:
    steps = (
        tuple(int(s) for s in args.scale_steps.split(",")) if args.scale_steps else plan.scale_steps
    )
    limit = args.p99_limit_ms
    out: dict[str, Any] = {
        "viewers_per_debate": args.scale_viewers,
        "rounds": args.scale_rounds,
        "p99_limit_ms": limit,
        "target_debates": 200,
        "steps": [],
        "largest_passing": None,
        "stopped_because": "all steps ran",
    }
    for debates in steps:
        if time.monotonic() + plan.warmup + window + 20 > deadline:
            out["stopped_because"] = "time bound reached"
            break
        _say(f"scale: {debates} duels x {args.scale_viewers} viewers")
        shape = _scale_shape(args, debates, plan.warmup, window)
        step = await scenarios.load(
            stack, http, watchers, shape, paces=stack.options.paces, tokens=stack.options.tokens
        )
        step["passed"] = _step_passed(step, limit)
        out["steps"].append(step)
        idle = await scenarios.app_idle(stack, http, limit=120)
        if step["passed"]:
            out["largest_passing"] = debates
        else:
            out["stopped_because"] = f"{debates} duels: p99 over {limit:.0f} ms or errors"
            break
        if not idle:
            out["stopped_because"] = "the app did not wind down after a step"
            break
    # py-spy follows one process: in a cluster that would be node A, not where debates run.
    profile = args.profile if args.profile is not None else not (args.quick or args.cluster)
    if profile and shutil.which("py-spy") and time.monotonic() + 60 < deadline:
        debates = args.profile_debates or min(out["largest_passing"] or steps[0], 200)
        path = args.results_dir / f"profile-{stamp}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        _say(f"profile: {debates} duels under py-spy")
        shape = _scale_shape(args, debates, plan.warmup, window)
        step = await scenarios.load(
            stack,
            http,
            watchers,
            shape,
            paces=stack.options.paces,
            tokens=stack.options.tokens,
            profile_to=path,
        )
        out["profiled_step"] = step
        if path.exists():
            out["profile"] = {"raw": str(path), **summarize(path)}
        await scenarios.app_idle(stack, http, limit=120)
    return out


def _step_passed(step: dict[str, Any], limit_ms: float) -> bool:
    p99 = step["token_to_viewer"]["p99_ms"]
    ends = step["stream_ends"]
    troubles = step["start_errors"] + ends.get("failed", 0) + ends.get("error", 0)
    return p99 is not None and p99 < limit_ms and troubles == 0


def _say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def _cluster_options(args: argparse.Namespace, plan: Plan) -> ClusterOptions:
    from bench.cluster import ClusterOptions, worker_concurrency

    steps = (
        tuple(int(s) for s in args.scale_steps.split(",")) if args.scale_steps else plan.scale_steps
    )
    largest = max(*steps, args.latency_debates or plan.latency_debates, plan.memory_debates)
    return ClusterOptions(
        workers=args.cluster,
        worker_concurrency=args.worker_concurrency or worker_concurrency(largest, args.cluster),
        postgres_url=args.postgres_url,
        redis_url=args.redis_url,
    )


COMPARED = ("latency", "lifecycle")


def _in_process_comparison(
    args: argparse.Namespace, plan: Plan, options: StackOptions, stamp: str
) -> dict[str, Any]:
    """The chosen scenarios of ``COMPARED`` on the in-process app (no stored history: it is
    not measured), with the same plan, paces and tokens as the cluster run that follows."""
    compared = [s for s in COMPARED if s in (args.only or SCENARIOS)]
    if not compared:
        return {}
    stack = Stack(dataclasses.replace(options, history_debates=0))
    only_compared = argparse.Namespace(**{**vars(args), "only": compared})
    try:
        _say("in-process app first, for comparison")
        stack.start()
        return asyncio.run(run(only_compared, plan, stack, stamp))
    except Exception as error:
        _say(f"in-process comparison failed: {type(error).__name__}: {error}")
        return {"error": f"{type(error).__name__}: {error}"}
    finally:
        stack.stop()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    plan = QUICK if args.quick else FULL
    options = StackOptions(
        paces=paces_from(args.pace, plan.default_paces),
        tokens=args.tokens or plan.tokens,
        history_debates=plan.history_debates
        if args.history_debates is None
        else args.history_debates,
        keep_home=args.keep_home,
        provider_worker=args.provider_worker,
        viewer_stream=args.viewer_stream,
        duel_providers=args.duel_providers,
        stream_tap=args.stream_tap,
    )
    # SIGTERM ends the run like Ctrl-C: through the finally below, which stops the children.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    results: dict[str, dict[str, Any]] = {}
    for number in range(1, args.repeat + 1):
        if args.repeat > 1:
            _say(f"pair {number} of {args.repeat}")
        stamp = datetime.now().strftime("%Y%m%dT%H%M%S")
        result = results[stamp] = _one_run(args, plan, options, stamp)
        if "error" in result or result.get("interrupted"):
            break
    if args.repeat > 1:  # the pairs run so far, when one failed or was interrupted
        summary = repeated_comparison(results)
        print()
        print(repeated_table(summary))
        write_json(summary, args.results_dir / f"{min(results)}-repeated.json")
    return 1 if any("error" in result for result in results.values()) else 0


def _one_run(
    args: argparse.Namespace, plan: Plan, options: StackOptions, stamp: str
) -> dict[str, Any]:
    """One run of the chosen scenarios (after the in-process comparison, with ``--compare``):
    its table printed, its results written to ``<stamp>.json``."""
    result: dict[str, Any] = {
        "mode": "quick" if args.quick else "full",
        "started": stamp,
        "machine": processes.machine(),
        "paces": {k: vars(v) for k, v in options.paces.items()},
        "tokens_per_reply": options.tokens,
    }
    stack = Stack(options)
    if args.cluster:
        cluster = _cluster_options(args, plan)
        result["cluster"] = {
            "web_nodes": 2,
            "workers": cluster.workers,
            "worker_concurrency": cluster.worker_concurrency,
        }
        from bench.cluster import ClusterStack

        stack = ClusterStack(options, cluster=cluster)
    started = time.monotonic()
    try:
        if args.cluster and args.compare:
            result["in_process"] = _in_process_comparison(args, plan, options, stamp)
        what = f"two web nodes and {args.cluster} worker(s)" if args.cluster else "the app"
        _say(f"starting the fake providers and {what} (data folder {stack.home})")
        stack.start()
        result["seed_seconds"] = round(stack.seed_seconds, 2)
        result.update(asyncio.run(run(args, plan, stack, stamp)))
    except KeyboardInterrupt:
        _say("interrupted: stopping")
        result["interrupted"] = True
    except Exception as error:
        result["error"] = f"{type(error).__name__}: {error}"
        tail = stack.app_log_tail()
        if tail:
            result["app_log_tail"] = tail
        _say(f"failed: {result['error']}")
    finally:
        stack.stop()
    result["seconds"] = round(time.monotonic() - started, 1)
    path = args.results_dir / f"{stamp}.json"
    write_json(result, path)
    print()
    print(table(result))
    print(
        f"\n{result['machine']['cpus']} CPUs ({result['machine']['cpu_model']}), the kernel's"
        f" autogroup {result['machine']['sched_autogroup']}; results in {path}"
    )
    return result


if __name__ == "__main__":
    sys.exit(main())
