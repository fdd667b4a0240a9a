"""The runner side of the protocol: start a testee, send requests, enforce time limits.

A session testee is one long-running process (``COMMAND session``) that
answers JSON lines; a CLI testee is one process per request (``COMMAND read
DIR``...). Either way a request that does not answer within its time limit
kills the testee's process group, and a testee that dies, hangs or answers
something that is not JSON raises ``TesteeFailure``; the runner records the
case as failed and starts the testee again for the next case.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import queue
import signal
import subprocess
import threading
from dataclasses import dataclass, field
from typing import IO, Any

Json = dict[str, Any]

MAX_LINE = 64 << 20  # one answer line; a testee that sends more is broken, not slow
STDERR_TAIL = 40


class TesteeFailure(Exception):
    """The testee crashed, timed out or broke the protocol."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind  # crash, timeout, protocol
        self.detail = detail


@dataclass
class Hello:
    name: str
    version: str
    spec_version: str
    roles: list[str]
    capabilities: list[str]
    choices: dict[str, str]
    raw: Json = field(default_factory=dict)
    # False for a file-level CLI testee, which has no hello: its exit code 3 then
    # means "not supported" for cases that need a capability or the writer role.
    declared: bool = True

    @classmethod
    def parse(cls, answer: Json) -> Hello:
        if answer.get("ok") is not True:
            raise TesteeFailure("protocol", f"hello was not ok: {answer}")
        try:
            hello = cls(
                name=str(answer["name"]),
                version=str(answer.get("version", "")),
                spec_version=str(answer["spec_version"]),
                roles=[str(role) for role in answer["roles"]],
                capabilities=[str(cap) for cap in answer.get("capabilities", [])],
                choices={str(k): str(v) for k, v in dict(answer.get("choices", {})).items()},
                raw=answer,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise TesteeFailure("protocol", f"malformed hello answer {answer}: {exc}") from exc
        return hello


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kill the testee and anything it started (it runs in its own process group)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


class SessionTestee:
    """``COMMAND session``: one process, JSON lines in and out."""

    def __init__(self, command: list[str], *, cwd: str | None = None) -> None:
        self.command = command
        self.cwd = cwd
        self._process: subprocess.Popen[bytes] | None = None
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._stderr: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL)

    def start(self, suite_version: str, timeout: float) -> Hello:
        self.close()
        self._lines = queue.Queue()
        self._stderr.clear()
        try:
            self._process = subprocess.Popen(
                [*self.command, "session"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=self.cwd,
                start_new_session=True,
            )
        except OSError as exc:
            raise TesteeFailure("crash", f"cannot start {self.command}: {exc}") from exc
        assert self._process.stdout is not None
        assert self._process.stderr is not None
        threading.Thread(target=self._pump, args=(self._process.stdout, self._lines), daemon=True).start()
        threading.Thread(target=self._drain, args=(self._process.stderr,), daemon=True).start()
        return Hello.parse(self.request({"op": "hello", "suite_version": suite_version}, timeout))

    @staticmethod
    def _pump(stream: IO[bytes], lines: queue.Queue[bytes | None]) -> None:
        while line := stream.readline(MAX_LINE):
            lines.put(line)
        lines.put(None)

    def _drain(self, stream: IO[bytes]) -> None:
        """Keep the last lines of standard error for the report; never block the testee on a full pipe."""
        while chunk := stream.read1(1 << 16):  # type: ignore[attr-defined]
            for line in chunk.decode("utf-8", "replace").splitlines():
                self._stderr.append(line[:500])

    def stderr_tail(self) -> str:
        return "\n".join(self._stderr)

    def request(self, request: Json, timeout: float) -> Json:
        process = self._process
        if process is None or process.stdin is None:
            raise TesteeFailure("crash", "the testee is not running")
        try:
            process.stdin.write(json.dumps(request).encode() + b"\n")
            process.stdin.flush()
        except OSError as exc:
            raise self._died(f"could not send the request ({exc})") from exc
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            _kill_group(process)
            self._process = None
            raise TesteeFailure("timeout", f"no answer within {timeout:g} s; killed") from None
        if line is None:
            raise self._died("it closed its output")
        if not line.endswith(b"\n"):
            self.close()
            raise TesteeFailure("protocol", f"answer line longer than {MAX_LINE} bytes")
        try:
            answer = json.loads(line)
        except ValueError as exc:
            self.close()
            raise TesteeFailure("protocol", f"answer is not JSON: {line[:200]!r}") from exc
        if not isinstance(answer, dict):
            self.close()
            raise TesteeFailure("protocol", f"answer is not a JSON object: {line[:200]!r}")
        return answer

    def _died(self, what: str) -> TesteeFailure:
        process = self._process
        code = None
        if process is not None:
            try:
                code = process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                _kill_group(process)
        self._process = None
        tail = self.stderr_tail()
        return TesteeFailure("crash", f"{what}; exit code {code}" + (f"; stderr:\n{tail}" if tail else ""))

    def close(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        try:
            if process.stdin is not None:
                process.stdin.write(b'{"op": "bye"}\n')
                process.stdin.close()
            process.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            _kill_group(process)


EXIT_CODES = {"accept": 0, "reject": 1, "recovered": 2}
EXIT_UNSUPPORTED = 3


class CliTestee:
    """The file-level CLI: one process per request; the hello comes from the registration."""

    def __init__(self, command: list[str], hello: Hello, *, cwd: str | None = None) -> None:
        self.command = command
        self.hello = hello
        self.cwd = cwd

    def start(self, suite_version: str, timeout: float) -> Hello:
        return self.hello

    def close(self) -> None:
        return

    def request(self, request: Json, timeout: float) -> Json:
        op = request["op"]
        args = [op, request["path"]]
        stdin = None
        for member in ("after", "after_binary", "at", "from_index", "since_us"):
            if op == "read" and request.get(member) is not None:
                args += [f"--{member.replace('_', '-')}", str(request[member])]
        if op == "read" and request.get("tolerant"):
            args.append("--tolerant")
        if op == "read" and request.get("parts") is not None:
            args += ["--plan", f"{request['log']}:{request['parts']}"]
        elif op == "read" and "log" in request:
            args += ["--split", f"{request['log']}:{request['start']}:{request['stop']}"]
        if op == "write":
            stdin = json.dumps({key: request[key] for key in ("records", "cutover_before", "options")}).encode()
        code, out, err = run_process([*self.command, *args], stdin, timeout, self.cwd)
        if code == EXIT_UNSUPPORTED:
            return {
                "ok": False,
                "error": {"class": "unsupported_operation", "log": None, "offset": None, "index": None},
            }
        try:
            answer = json.loads(out)
        except ValueError as exc:
            raise TesteeFailure("crash" if code not in (0, 1, 2) else "protocol", _describe(code, out, err)) from exc
        if not isinstance(answer, dict):
            raise TesteeFailure("protocol", _describe(code, out, err))
        if op == "read":
            expected_code = EXIT_CODES.get(str(answer.get("outcome")))
            if code != expected_code:
                raise TesteeFailure("protocol", f"exit code {code} for outcome {answer.get('outcome')!r}")
            return {"ok": True, **answer}
        if code != (0 if answer.get("ok") else 1):
            raise TesteeFailure("protocol", f"exit code {code} with answer {answer}")
        return answer


def _describe(code: int, out: bytes, err: bytes) -> str:
    return f"exit code {code}; stdout {out[:200]!r}; stderr {err[-500:].decode('utf-8', 'replace')}"


def run_process(command: list[str], stdin: bytes | None, timeout: float, cwd: str | None) -> tuple[int, bytes, bytes]:
    """Run one command in its own process group; kill the group when it outlives ``timeout``."""
    try:
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as exc:
        raise TesteeFailure("crash", f"cannot start {command}: {exc}") from exc
    try:
        out, err = process.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        raise TesteeFailure("timeout", f"no answer within {timeout:g} s; killed") from None
    return process.returncode, out, err
