"""When Python's cyclic garbage collector may look at the objects a command has settled.

A command's objects fall in three groups: the imported modules, what the run loads (corpus, goldens,
index, the history's engine) and what the run makes. Only the last can become garbage the collector
is needed for; each full collection traverses the other two again. These blocks keep the collector
off them (`gc.freeze`), and give them back (`gc.unfreeze`) when the outermost block ends, so a Python
API caller's process is left as it was. None of this changes what a run computes or stores.
"""

from __future__ import annotations

import atexit
import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_FREEZING = threading.local()  # set while this thread's `settled_objects_frozen` owns the freeze
_IMPORTS_FROZEN: list[bool] = []  # the freeze `imports_settled` made (the command line's own)


@contextmanager
def settled_objects_frozen() -> Iterator[None]:
    """Keep the collector off the objects that exist on entry (the imported modules, then the
    corpus, the goldens, the history's engine and the retriever) until the block ends: a nested
    block freezes what was made since. A warm bundled `ragqual retrieval` makes ~250 young
    collections and one or two full ones, and each full one traversed every module, chunk and
    golden again: 0.1-0.15 s of the run's CPU went to the collector (gc.callbacks), ~0.05 s of it
    once they are frozen. What the run makes is still collected as usual; the frozen objects are
    given back when the outermost block ends. Left alone when the collector is off or something
    else froze objects (the command line's own import freeze, `imports_settled`, is taken over)."""
    if getattr(_FREEZING, "owned", False):
        gc.freeze()
        yield
        return
    if not gc.isenabled() or (gc.get_freeze_count() and not _IMPORTS_FROZEN):
        yield
        return
    gc.freeze()
    _FREEZING.owned = True
    try:
        yield
    finally:
        _FREEZING.owned = False
        _IMPORTS_FROZEN.clear()
        gc.unfreeze()


@contextmanager
def imports_settled() -> Iterator[None]:
    """For the command line only: import a command's modules with the collector paused, then
    freeze what they made. Importing SQLAlchemy, numpy and the command's modules makes some
    hundred thousand objects, none of them garbage, and the collections they set off traversed
    them again and again: ~0.06-0.09 s of CPU per command (gc.callbacks; six collections of the
    middle generation and one full one). The first `settled_objects_frozen` block takes this
    freeze over and gives everything back when it ends. Left alone when the collector is off or
    something else froze objects."""
    if not gc.isenabled() or gc.get_freeze_count():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        _IMPORTS_FROZEN.append(True)
        gc.enable()


@contextmanager
def imports_given_back() -> Iterator[None]:
    """Around a whole command (`cli.main.LazyGroup.invoke`): an import freeze no run block took
    over (`history`, `report`, ...) is given back when the command ends, so a Python process that
    calls the command line (tests, notebooks) is left as it was."""
    try:
        yield
    finally:
        if _IMPORTS_FROZEN and not getattr(_FREEZING, "owned", False):
            _IMPORTS_FROZEN.clear()
            gc.unfreeze()


def freeze_at_exit() -> None:
    """For a process that ends with the run (the command line): freeze every object when the
    interpreter starts to exit (`atexit`), so its last collections, which traverse every live
    object while the modules are torn down, skip them. Measured on a warm bundled `ragqual
    retrieval`: ~0.13 s of CPU from the last exit handler to the process's end, ~0.02 s frozen.
    Objects are still freed by reference counting as the modules are cleared; exit handlers
    registered before this one (temporary folders, logging) still run after it."""
    if not _EXIT_FREEZE:
        atexit.register(gc.freeze)
        _EXIT_FREEZE.append(True)


_EXIT_FREEZE: list[bool] = []
