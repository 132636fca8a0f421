"""The process layer: everything that starts, guards and talks to the plugin's child processes.

``inject_sticky_error`` is its public test hook (``docs/reliability.md``).
"""

from .sticky_errors import inject_sticky_error

__all__ = ["inject_sticky_error"]
