# SPDX-License-Identifier: Apache-2.0
"""Stand-ins for xarray-sql's internal names (its Arrow readers, pushdown
datasets, Flight SQL server, ADBC and geometry helpers, ...): importable,
so a test module that imports some of them still runs its other tests,
but any use raises NotApplicable, which the compatibility report counts
as "not applicable: uses xarray-sql internal <name>"."""


class NotApplicable(Exception):
    """A test used a part of xarray-sql that is not its public API."""


class Internal:
    def __init__(self, name: str):
        self._name = name

    def _refuse(self, *args, **kwargs):
        raise NotApplicable(f"uses xarray-sql internal {self._name}")

    __call__ = _refuse

    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return Internal(f"{self._name}.{attr}")

    # usable in annotations (`xql.FlightSQLServer | None`), which are evaluated at import
    def __or__(self, other):
        return self

    __ror__ = __or__

    def __getitem__(self, key):
        return self

    def __iter__(self):
        self._refuse()

    def __instancecheck__(self, obj):
        self._refuse()

    def __mro_entries__(self, bases):
        self._refuse()


def module_getattr(module: str):
    def __getattr__(name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return Internal(f"{module}.{name}")

    return __getattr__


_no_wheel = {}


def context(name: str):
    """qlink.xarray's Context; without the qlink wheel a class whose every
    use raises the ImportError, so each test that needs it fails alone
    (reported "not run") instead of its whole module failing to import."""
    import qlink.xarray as q

    try:
        return getattr(q, name)
    except ImportError as exc:
        if "cls" not in _no_wheel:
            error = str(exc)

            class NoWheel:
                def __init__(self, *args, **kwargs):
                    raise ImportError(error)

            NoWheel.__name__ = "Context"
            _no_wheel["cls"] = NoWheel
        return _no_wheel["cls"]


class _StandInModules:
    """A meta path finder: any xarray_sql.<module> without a file here (its
    internal modules: df, ds, cftime, lazyscan, backends.duckdb, ...) is a
    module whose every name is a stand-in."""

    def find_spec(self, fullname, path=None, target=None):
        import importlib.machinery
        import importlib.util

        if not fullname.startswith("xarray_sql.") or importlib.machinery.PathFinder.find_spec(fullname, path):
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        module.__getattr__ = module_getattr(module.__name__)


def install() -> None:
    import sys

    if not any(isinstance(f, _StandInModules) for f in sys.meta_path):
        sys.meta_path.append(_StandInModules())
