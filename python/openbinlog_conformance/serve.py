"""The testee side of the protocol: a file-level CLI and a JSON-lines session.

An adapter implements ``Handler`` (hello, the kinds of read, write, recover;
optionally ``read_from`` for the starts of capabilities resume_at and seek,
and ``read_plan`` for the planned splits of capability split_plan) and calls
``main``; this module does the argument parsing, the session loop, the exit
codes and the flushing (spec/conformance.md, "The testee protocol"). The
Python reference adapter and the deliberately broken test adapters are such
handlers.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Protocol, TextIO

from .canonical import unsupported

Json = dict[str, Any]

EXIT_ACCEPT = 0
EXIT_REJECT = 1
EXIT_RECOVERED = 2
EXIT_UNSUPPORTED = 3
EXIT_BY_OUTCOME = {"accept": EXIT_ACCEPT, "reject": EXIT_REJECT, "recovered": EXIT_RECOVERED}


class Unsupported(Exception):
    """Raised by a handler for a request outside its roles or capabilities."""


class Handler(Protocol):
    def hello(self) -> Json: ...
    def read(self, path: str, after: str | bytes | None) -> Json: ...
    def read_tolerant(self, path: str) -> Json: ...
    def read_split(self, path: str, log: int, start: int, stop: int) -> Json: ...
    def write(self, path: str, spec: Json) -> Json: ...
    def recover(self, path: str) -> Json: ...


def answer(handler: Handler, request: Json) -> Json:
    """One session request to one response object."""
    op = request.get("op")
    try:
        if op == "hello":
            return {"ok": True, **handler.hello()}
        if op == "read":
            return {"ok": True, **_read(handler, request)}
        if op == "write":
            spec: Json = {key: request[key] for key in ("records", "cutover_before", "options") if key in request}
            return handler.write(request["path"], spec)
        if op == "recover":
            return handler.recover(request["path"])
    except Unsupported as exc:
        return {"ok": False, "error": unsupported(str(exc))}
    return {"ok": False, "error": unsupported(f"unknown operation {op!r}")}


# The starts a handler serves with ``read_from`` (capabilities resume_at and seek).
STARTS = ("at", "from_index", "since_us")


def _read(handler: Handler, request: Json) -> Json:
    """A read from the log's start, after a ref (text or binary), at a ref, from an index or a time,
    tolerant, or of one split of a segment."""
    path = request["path"]
    after: str | bytes | None = request.get("after")
    if request.get("after_binary") is not None:
        if after is not None:
            raise Unsupported("a read has one ref")
        after = _hex(request["after_binary"])
    starts = [name for name in STARTS if request.get(name) is not None]
    plan = request.get("parts") is not None
    split = "log" in request and not plan
    if sum((after is not None, bool(starts), split, plan, request.get("tolerant") is True)) > 1:
        raise Unsupported("a read combines at most one way to start")
    if request.get("tolerant") is True:
        return handler.read_tolerant(path)
    if split:
        return handler.read_split(path, int(request["log"]), int(request["start"]), int(request["stop"]))
    if plan:
        read_plan = getattr(handler, "read_plan", None)
        parts = int(request["parts"])
        if read_plan is None or parts < 1:
            raise Unsupported(f"planned splits into {parts} parts")
        planned: Json = read_plan(path, int(request["log"]), parts)
        return planned
    if starts:
        read_from = getattr(handler, "read_from", None)
        if read_from is None:
            raise Unsupported(f"reads starting by {starts[0]}")
        answer: Json = read_from(path, {starts[0]: request[starts[0]]})
        return answer
    return handler.read(path, after)


def _hex(text: object) -> bytes:
    try:
        return bytes.fromhex(str(text))
    except ValueError as exc:
        raise Unsupported(f"after_binary is not hexadecimal: {text!r}") from exc


def parse_split(text: str) -> Json:
    """``LOG:START:STOP``, the command-line form of a split, as the members of a read request."""
    log, start, stop = (int(part) for part in text.split(":"))
    return {"log": log, "start": str(start), "stop": str(stop)}


def parse_plan(text: str) -> Json:
    """``LOG:PARTS``, the command-line form of planned splits, as the members of a read request."""
    log, parts = (int(part) for part in text.split(":"))
    return {"log": log, "parts": parts}


def session(handler: Handler, stdin: TextIO, stdout: TextIO) -> int:
    for line in stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        if request.get("op") == "bye":
            stdout.write('{"ok": true}\n')
            stdout.flush()
            return 0
        stdout.write(json.dumps(answer(handler, request)) + "\n")
        stdout.flush()
    return 0


def main(handler: Handler, argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="BinLog conformance testee")
    commands = parser.add_subparsers(dest="command", required=True)
    read = commands.add_parser("read", help="read a log directory and print the canonical JSON answer")
    read.add_argument("directory")
    how = read.add_mutually_exclusive_group()
    how.add_argument("--after", help="resume after this ref (LOG:OFFSET:INDEX)")
    how.add_argument("--after-binary", help="resume after this ref in its binary form (hexadecimal)")
    how.add_argument("--at", help="resume at this ref (LOG:OFFSET:INDEX): the referenced record first")
    how.add_argument("--from-index", help="start at the first record whose index is at least this")
    how.add_argument("--since-us", help="start at the first record whose timestamp_us is at least this")
    how.add_argument("--tolerant", action="store_true", help="step over damage and list it")
    how.add_argument("--split", type=parse_split, help="only segment LOG's records in [START, STOP)")
    how.add_argument(
        "--plan", type=parse_plan, help="segment LOG in up to PARTS planned splits, read one after another"
    )
    commands.add_parser("write", help="write a new log from the specification on stdin").add_argument("directory")
    commands.add_parser("recover", help="run writer recovery on a log directory").add_argument("directory")
    commands.add_parser("session", help="serve JSON-lines requests on stdin")
    argv = list(sys.argv[1:] if argv is None else argv)
    for option in ("--after", "--at"):
        if option in argv[:-1]:
            # A ref may begin with "-" (an invalid one, which the reader must reject): keep it a value.
            at = argv.index(option)
            argv[at : at + 2] = [f"{option}={argv[at + 1]}"]
    args = parser.parse_args(argv)
    if args.command == "session":
        return session(handler, sys.stdin, sys.stdout)
    try:
        if args.command == "read":
            request = {
                "path": args.directory,
                "after": args.after,
                "after_binary": args.after_binary,
                "at": args.at,
                "from_index": args.from_index,
                "since_us": args.since_us,
                "tolerant": args.tolerant,
                **(args.split or {}),
                **(args.plan or {}),
            }
            result = _read(handler, request)
            code = EXIT_BY_OUTCOME[result["outcome"]]
        else:
            if args.command == "write":
                result = handler.write(args.directory, json.load(sys.stdin))
            else:
                result = handler.recover(args.directory)
            code = EXIT_ACCEPT if result["ok"] else EXIT_REJECT
    except Unsupported as exc:
        print(json.dumps({"ok": False, "error": unsupported(str(exc))}))
        return EXIT_UNSUPPORTED
    print(json.dumps(result))
    return code
