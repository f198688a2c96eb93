"""The ragqual exception tree and the exit codes the CLI maps it to.

    RagqualError                 exit 2 unless a subclass says otherwise
    ├── InputError               2  bad input or usage (file and line in the message)
    │   ├── ValidationFailed     2  several input problems found in one pass
    │   ├── InvalidPattern       2  (core.textmatch) a regex that does not compile
    │   ├── TrecEvalRefused         (core.trec) where trec_eval stops with an error: its exit code
    │   ├── QueryRefused         2  (store.queries) the database refused a read-only statement
    │   └── QueryStopped         2  (store.sql_console) a statement ran past its time or byte limit
    ├── SchemaOutOfDate          2  database behind the migrations (names the fix)
    ├── CacheMiss                2  replay mode asked for an answer the cache lacks
    ├── RegexTimeout             2  (core.textmatch) a pattern did not finish matching in time
    ├── SubjectContractError     2  (engine.subject) a subject broke its contract: a bug, not bad luck
    ├── GateFailed               1  a regression or a quality gate failed
    ├── LeakDetected             1  a retrieved chunk does not belong to the corpus
    ├── ForeignPoints            1  points ragqual did not write carry its reserved tag: nothing deleted
    ├── ServiceUnavailable       3  Ollama, Qdrant or another service unreachable
    │   ├── ModelCallFailed      3  one model call failed for good: recorded on its trial, the run goes on
    │   └── CircuitOpen          3  (engine.breaker) K failed attempts in a row: the run stops as failed
    └── StorageFault             4  the history database failed (disk full, read-only, deleted or replaced)

    KeyboardInterrupt
    └── RunInterrupted         130  Ctrl-C (or SIGTERM) during a run: names the run and the command that resumes it

    any other Exception         70  an internal error (a bug): one line naming the command and the file
                                    holding the traceback (`-v` prints it); never 1, which a CI gate reads
                                    as a regression (70 is EX_SOFTWARE of sysexits.h)

Every exception class ragqual defines is in this tree, except internal signals that are raised
and caught inside ragqual (tests/test_error_tree.py lists them with their reasons).
"""

from __future__ import annotations

from dataclasses import dataclass

EXIT_OK = 0
EXIT_GATE = 1
EXIT_INPUT = 2
EXIT_SERVICE = 3
EXIT_STORAGE = 4
EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130


class RagqualError(Exception):
    """Base of every error ragqual raises on purpose."""

    exit_code = EXIT_INPUT


class InputError(RagqualError):
    exit_code = EXIT_INPUT


@dataclass(frozen=True)
class Issue:
    """One problem in one input file; `line` is 1-based, None for whole-file problems."""

    file: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.message}"


class ValidationFailed(InputError):
    """Every problem found in one pass over the inputs, not only the first."""

    def __init__(self, issues: list[Issue]):
        self.issues = list(issues)
        head = f"{len(self.issues)} problem(s) in the input"
        super().__init__(head + "\n" + "\n".join(str(i) for i in self.issues))


class SchemaOutOfDate(RagqualError):
    exit_code = EXIT_INPUT


class CacheMiss(RagqualError):
    exit_code = EXIT_INPUT


class GateFailed(RagqualError):
    exit_code = EXIT_GATE


class LeakDetected(RagqualError):
    exit_code = EXIT_GATE


class ForeignPoints(RagqualError):
    """Points that ragqual did not write carry its reserved tag; ragqual refuses to touch them."""

    exit_code = EXIT_GATE


class ServiceUnavailable(RagqualError):
    exit_code = EXIT_SERVICE


class ModelCallFailed(ServiceUnavailable):
    """One model call failed for good (after its retries); the message is meant for that trial."""

    def __init__(self, message: str, *, reason: str = "failed", attempts: int = 1):
        super().__init__(message)
        self.reason = reason  # "timeout" | "server_error" | "rejected" | "malformed"
        self.attempts = attempts


class StorageFault(RagqualError):
    """The history database could not be written: the message names the file and the fix."""

    exit_code = EXIT_STORAGE
class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a run after its `interrupted` event was stored. The command that started
    the run fills in `resume_command`; the CLI prints it with the run id (exit 130)."""

    def __init__(self, run_id: int, stored: int, pending: int):
        super().__init__(f"run {run_id} interrupted")
        self.run_id = run_id
        self.stored = stored
        self.pending = pending
        self.resume_command: str | None = None

    def message(self) -> str:
        text = f"interrupted: run {self.run_id} keeps the {self.stored} trial(s) it finished this time"
        return text + (f"; `{self.resume_command}` runs the rest" if self.resume_command else "")
