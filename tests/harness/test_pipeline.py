"""The judging pipeline: one judgement at a time, each after the next story started, niced, all before the end."""

from __future__ import annotations

import logging
import subprocess
import threading
import time
from concurrent.futures import Future
from pathlib import Path

import pytest

from harness.batch import summary, worst
from harness.pipeline import JudgingPipeline
from harness.priority import JUDGE_NICE, nice_of
from harness.runlog import run_log
from testbed.runfolder import RunFolder


def judgement(name: str, log: list[str], fail: bool = False, seconds: float = 0.05):  # type: ignore[no-untyped-def]
    def judge() -> str:
        log.append(f"start {name} nice {nice_of()}")
        time.sleep(seconds)
        log.append(f"end {name}")
        if fail:
            raise RuntimeError(f"{name} broke")
        return name
    return judge


def test_judgements_wait_for_the_next_story_then_run_one_at_a_time_in_order_niced() -> None:
    log: list[str] = []
    done: list[str] = []

    def said(future: Future[str]) -> None:
        done.append(future.result())
    with JudgingPipeline() as pipe:
        futures = [pipe.submit(judgement(n, log), said) for n in ("a", "b")]
        time.sleep(0.2)
        assert log == [], "nothing is judged before the next story has started"
        pipe.release()
        futures.append(pipe.submit(judgement("c", log), said))
    assert log == [f"{s} {n}" + (f" nice {JUDGE_NICE}" if s == "start" else "")
                   for n in "abc" for s in ("start", "end")]
    assert done == ["a", "b", "c"] and [f.result() for f in futures] == ["a", "b", "c"]
    assert nice_of() == 0, "the caller's thread keeps its priority"


def test_a_process_the_worker_starts_runs_niced_too() -> None:
    niceness: list[str] = []

    def start_one() -> str:
        out = subprocess.run(["cat", "/proc/self/stat"], capture_output=True, text=True, check=True).stdout
        return out.rsplit(")", 1)[1].split()[16]  # field 19: nice
    with JudgingPipeline() as pipe:
        pipe.submit(start_one, lambda f: niceness.append(f.result()))
    assert niceness == [str(JUDGE_NICE)]


def test_a_broken_story_still_waits_for_the_runs_already_made_and_a_judgements_error_is_kept() -> None:
    log: list[str] = []
    futures: list[Future[str]] = []
    with pytest.raises(KeyError), JudgingPipeline() as pipe:
        futures.append(pipe.submit(judgement("a", log, fail=True), lambda f: None))
        futures.append(pipe.submit(judgement("b", log), lambda f: None))
        raise KeyError("the next story broke")
    assert [line.split(" nice")[0] for line in log] == ["start a", "end a", "start b", "end b"]
    with pytest.raises(RuntimeError, match="a broke"):
        futures[0].result()
    assert futures[1].result() == "b"


def test_after_an_interrupt_the_wait_is_bounded_and_what_never_started_is_cancelled() -> None:
    log: list[str] = []
    with pytest.raises(KeyboardInterrupt), JudgingPipeline(grace_s=0.3) as pipe:
        slow = pipe.submit(judgement("slow", log, seconds=1.0), lambda f: None)
        never = pipe.submit(judgement("never", log), lambda f: None)
        raise KeyboardInterrupt
    assert never.cancelled() and not slow.done()
    assert log == [f"start slow nice {JUDGE_NICE}"]


def test_the_warm_up_runs_once_on_the_worker_when_the_first_story_starts_and_may_fail() -> None:
    calls: list[str] = []

    def warm_up() -> None:
        calls.append(threading.current_thread().name)
        raise RuntimeError("no JVM today")
    with JudgingPipeline(warm_up) as pipe:
        time.sleep(0.1)
        assert calls == [], "nothing before the first story starts"
        pipe.release()
        future = pipe.submit(judgement("a", []), lambda f: None)
        pipe.release()
    assert calls == ["judge"]
    assert future.result() == "a", "a failed warm-up costs only its time"


def test_what_the_warm_up_starts_says_after_the_story_ended_is_kept_in_that_storys_run(tmp_path: Path,
                                                                                      caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)  # as the CLI's console sets it
    folder = RunFolder(tmp_path / "run").make()
    story_over = threading.Event()

    def warm_up() -> None:  # Spark's JVM, started niced beside a busy story, may speak only once the story is over
        def jvm_output() -> None:
            story_over.wait(5)
            logging.getLogger("spark.jvm").info("WARNING: Using incubator modules")
        speaker = threading.Thread(target=jvm_output)
        speaker.start()
        speaker.join()
    with JudgingPipeline(warm_up) as pipe:
        with run_log(folder):
            pipe.release(lambda: run_log(folder, this_thread_only=True))
        pipe.submit(judgement("the story's run", []), lambda f: None)
        story_over.set()
    assert " INFO spark.jvm WARNING: Using incubator modules" in folder.harness_log.read_text()


def test_the_worst_status_puts_a_harness_failure_over_a_mismatch_over_unknown() -> None:
    assert worst([0, 2, 1]) == 1 and worst([1, 3, 0]) == 3 and worst([0, 2]) == 2 and worst([]) == 0
    assert summary(["a", "b", "c"], [0, 3]) == \
        "1 of 3 scenarios passed; FAILED: b (3: the harness failed); not run (interrupted): c"
