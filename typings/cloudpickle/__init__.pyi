# Types for the part of cloudpickle that fnkit uses: cloudpickle ships none, and no stub
# package exists. (`loads` is pickle's own.)

from collections.abc import Callable
from pickle import PickleBuffer
from pickle import loads as loads
from types import ModuleType
from typing import Any

__all__ = ["dumps", "loads", "register_pickle_by_value", "unregister_pickle_by_value"]

def dumps(
    obj: Any, protocol: int | None = None, buffer_callback: Callable[[PickleBuffer], Any] | None = None
) -> bytes: ...
def register_pickle_by_value(module: ModuleType) -> None: ...
def unregister_pickle_by_value(module: ModuleType) -> None: ...
