"""Reading `sgf sandbox build`'s output: each step once, cut to a line; a failure's cause."""

from __future__ import annotations

from pathlib import Path

from sgf.image.buildview import WIDTH, failure, steps

CLASSIC = (
    b"Sending build context to Docker daemon  412MB\r\n"
    b"Step 1/3 : ARG BASE=debian:bookworm-slim\n"
    b" ---> Using cache\n"
    b"Step 2/3 : RUN apt-get update     && apt-get install -y " + b"x " * 60 + b"\n"
    b"Get:1 http://deb.debian.org bookworm InRelease\n"
    b"Step 3/3 : LABEL springfield.stack=python\n"
    b"Successfully tagged img:1\n"
)
BUILDKIT = (
    b"#5 [2/4] RUN pip install pensa\n#5 0.52 Collecting pensa\n#5 DONE 1.2s\n"
    b"#6 [3/4] COPY claude /usr/local/bin/claude\n#6 CACHED\n"
)


def test_steps_are_shown_once_each_and_cut_to_one_line() -> None:
    shown = list(steps(CLASSIC.decode().splitlines()))
    assert shown[0] == "[1/3] ARG BASE=debian:bookworm-slim"
    assert shown[1].startswith("[2/3] RUN apt-get update && apt-get install -y x x")
    assert shown[1].endswith("…")
    assert len(shown[1]) <= len("[2/3] ") + WIDTH
    assert shown[2] == "[3/3] LABEL springfield.stack=python"
    assert list(steps(["Step 1/3 : A", "Step 1/3 : A", "noise"])) == ["[1/3] A"]


def test_buildkit_steps_are_recognised() -> None:
    shown = list(steps(BUILDKIT.decode().splitlines()))
    assert shown == ["[2/4] RUN pip install pensa", "[3/4] COPY claude /usr/local/bin/claude"]


def test_the_cause_of_a_failed_build_is_its_last_error_line() -> None:
    from sgf.image import buildview

    kit = [
        "#4 [internal] load metadata for registry.invalid:5000/no:1",
        "#4 ERROR: failed to do request: Head https://registry.invalid:5000/v2/no/manifests/1: "
        "dial tcp: lookup registry.invalid: no such host",
        "------",
        " > [internal] load metadata for registry.invalid:5000/no:1:",
        "ERROR: failed to solve: registry.invalid:5000/no:1: failed to resolve source metadata",
    ]
    assert buildview.cause(kit) == (
        "ERROR: failed to solve: registry.invalid:5000/no:1: failed to resolve source metadata"
    )
    apt = ["Step 5/14 : RUN apt-get install -y make", "E: Unable to locate package mkae"]
    assert buildview.cause(apt) == "E: Unable to locate package mkae"
    assert buildview.cause(["Step 1/2 : FROM x", "all fine"]) is None


def test_a_failure_names_the_engines_words_the_logs_cause_and_the_log(tmp_path: Path) -> None:
    log = tmp_path / "sandbox-build.log"
    log.write_text("Step 5/14 : RUN apt-get install -y mkae\nE: Unable to locate package mkae\n")
    error = "docker build of img:1 failed: The command returned a non-zero code: 100"
    assert failure(error, log) == (
        f"{error}: E: Unable to locate package mkae; the full output is in {log}"
    )
    assert failure("docker build of img:1 failed: E: Unable to locate package mkae", log) == (
        f"docker build of img:1 failed: E: Unable to locate package mkae; the full output is in "
        f"{log}"
    )  # said once
    assert failure("boom", tmp_path / "missing.log") == (
        f"boom; the full output is in {tmp_path / 'missing.log'}"
    )
