"""``--targets FILE``: the machines of a fleet as ``check``/``scan``/``gate`` targets.

A FILE is recognised by its content, not its name:

- a ``doctor --format json`` report: each distinct GPU model of ``stack.gpus`` (name and compute
  capability as NVML saw them) on the kernel driver ``stack.kernel_driver.version`` (else the
  ``libcuda`` build), with the cuda-compat package its ``libcuda`` came from, if any (R-FWD);
  the node is named by ``stack.host``, else by the file name without
  ``doctor-`` and ``.json``. A report without GPUs adds nothing (a warning says so);
- a JSON list of such reports;
- TOML with ``targets = [{name = "...", gpu = "H100", driver = "550", host_arch = "aarch64"}, ...]``
  (``[[targets]]`` tables; ``driver`` defaults to ``--driver``, then to the newest branch;
  ``host_arch``, the node's CPU, to what the GPU's data says: R-HOST; ``env``, the node's
  environment as ``--env`` gives it, ``{CUDA_DISABLE_PTX_JIT = "1"}`` or ``["NAME=VALUE"]``).

A target's JIT switches (``CUDA_FORCE_PTX_JIT``, ``CUDA_DISABLE_PTX_JIT`` and their older
spellings) come from its entry's ``env`` or its doctor report's ``stack.env``, and from ``--env``,
which applies to every target: a switch either turns on is on.

``[tool.fatbin-inspect] targets`` in pyproject.toml lists such tables and file globs (relative to
the pyproject.toml). Targets with the same GPU, driver and JIT switches become one target that
names every host, so a hundred identical nodes are checked once.
"""

from __future__ import annotations

import dataclasses
import glob
import os
import re
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from fatbin_inspect.errors import UsageError

if TYPE_CHECKING:  # the engine's data is loaded when a target is resolved, not when a command is built
    from fatbin_inspect.compat.targets import Compat, Driver, Gpu, Target
    from fatbin_inspect.errors import InputError

ENTRY_KEYS = {"name", "gpu", "driver", "host_arch", "env"}
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
HOST_ARCHS = ("x86_64", "aarch64", "ppc64le", "x86", "arm", "riscv64")  # as containers.machine_of names them


def _ignore(message: str) -> None:
    """The default ``warn``: the library is silent; the command line passes its ``say``."""


def _host_of(path: str) -> str:
    base = os.path.basename(path)
    for suffix in (".json", ".JSON"):
        base = base.removesuffix(suffix)
    return base.removeprefix("doctor-").removeprefix("doctor_") or base


def _field(doc: Any, key: str, kind: type | tuple[type, ...], path: str, where: str) -> Any:
    """``doc[key]`` when ``doc`` is an object holding it (None when absent or null); a value of
    another type is a UsageError naming the file and key."""
    if not isinstance(doc, dict):
        if doc not in (None, {}):
            raise UsageError(f"{path}: {where}: expected an object")
        return None
    value = doc.get(key)
    if value is not None and (not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool)):
        raise UsageError(f"{path}: {where}.{key}: expected a {getattr(kind, '__name__', 'value')}")
    return value


def _stack(doc: dict[str, Any], path: str) -> dict[str, Any]:
    """A doctor report's ``stack`` with its ``gpus`` list; a UsageError for anything else."""
    stack = doc.get("stack")
    if not isinstance(stack, dict) or not isinstance(stack.get("gpus", []), list):
        raise UsageError(
            f"{path}: a JSON object without a doctor 'stack': not a `doctor --format json` report"
        )
    return stack


def _doctor_targets(
    doc: dict[str, Any], path: str, default_driver: str | None, warn: Callable[[str], None]
) -> list[Target]:
    """One target per distinct GPU model of a doctor report, on its driver, named by its host."""
    stack = _stack(doc, path)
    host: str = _field(stack, "host", str, path, "stack") or _host_of(path)
    kdrv, udrv = stack.get("kernel_driver") or {}, stack.get("user_driver") or {}
    version = _doctor_driver(kdrv, udrv, path) or default_driver
    from fatbin_inspect.compat.targets import Target, jit_switches

    machine = stack.get("machine")
    machine = machine if isinstance(machine, str) and machine in HOST_ARCHS else None
    force, disable = jit_switches(_doctor_env(stack.get("env"), path))
    out: list[Target] = []
    for i, g in enumerate(stack.get("gpus") or ()):
        t = Target(
            _doctor_gpu(g, path, i),
            _driver(version, path),
            force,
            disable,
            hosts=(host,),
            compat=_doctor_compat(udrv, kdrv, path),
            host=machine,
        )
        if t not in out:
            out.append(t)
    if not out:
        warn(f"{path}: no GPU in this doctor report ({host}): no target from it")
    return out


def _doctor_driver(kdrv: Any, udrv: Any, path: str) -> str | None:
    """The kernel driver's version, else the libcuda build, each field of its type."""
    version = _field(kdrv, "version", str, path, "stack.kernel_driver")
    build = _field(udrv, "build", str, path, "stack.user_driver")
    _field(udrv, "path", str, path, "stack.user_driver")
    _field(udrv, "api_version", int, path, "stack.user_driver")
    return version or build


def _doctor_gpu(g: Any, path: str, i: int) -> Gpu:
    """The GPU of ``stack.gpus[i]``: its compute capability, named as NVML named it."""
    from fatbin_inspect.compat import data
    from fatbin_inspect.compat.targets import gpu_for_cc

    if not isinstance(g, dict) or not isinstance(g.get("cc"), str) or not isinstance(g.get("name"), str):
        raise UsageError(f"{path}: stack.gpus[{i}]: expected an object with 'name' and 'cc'")
    try:
        cc = data.parse_cc(g["cc"])
    except (ValueError, TypeError):
        raise UsageError(f"{path}: stack.gpus[{i}]: compute capability {g['cc']!r} is not X.Y") from None
    gpu = gpu_for_cc(cc, name=g["name"])
    if _field(g, "tegra", bool, path, f"stack.gpus[{i}]") and not gpu.tegra:
        gpu = dataclasses.replace(gpu, tegra=True)
    return gpu


def _doctor_env(items: Any, path: str) -> dict[str, str]:
    """A doctor report's ``stack.env`` (``[{name, value, effect}]``) as ``--env`` gives it."""
    if items is None:
        return {}
    if not isinstance(items, list):
        raise UsageError(f"{path}: stack.env: expected a list of {{name, value}} objects")
    out = {}
    for i, it in enumerate(items):
        name = _field(it, "name", str, path, f"stack.env[{i}]")
        value = _field(it, "value", str, path, f"stack.env[{i}]")
        if name is None or value is None:
            raise UsageError(f"{path}: stack.env[{i}]: expected an object with 'name' and 'value'")
        out[name] = value
    return out


def entry_env(value: Any, here: str) -> dict[str, str]:
    """A fleet entry's ``env``: a table ``{NAME = "VALUE"}`` (a number is its digits) or a list
    of ``"NAME=VALUE"`` strings, as ``--env`` takes them; anything else is a UsageError naming
    the entry and key."""
    out = {}
    for k, v in _env_pairs(value, here):
        k = k.strip() if isinstance(k, str) else k
        if not isinstance(k, str) or not ENV_NAME.fullmatch(k):
            raise UsageError(f"{here}: env: {str(k)[:60]!r} is not an environment variable name")
        if isinstance(v, int) and not isinstance(v, bool):
            v = str(v)
        if not isinstance(v, str):
            raise UsageError(f'{here}: env.{k}: expected a string such as "1"')
        out[k] = v
    return out


def _env_pairs(value: Any, here: str) -> list[tuple[Any, Any]]:
    """(name, value) of an entry's ``env`` table or ``["NAME=VALUE"]`` list, unchecked."""
    if isinstance(value, dict):
        return list(value.items())
    if not isinstance(value, list):
        raise UsageError(f'{here}: env: expected a table such as {{ CUDA_DISABLE_PTX_JIT = "1" }}')
    for j, p in enumerate(value):
        if not isinstance(p, str) or "=" not in p:
            raise UsageError(f'{here}: env[{j}]: expected "NAME=VALUE", e.g. "CUDA_DISABLE_PTX_JIT=1"')
    return [tuple(p.split("=", 1)) for p in value]


def _doctor_compat(udrv: Any, kdrv: Any, where: str) -> Compat | None:
    """The cuda-compat package a doctor report's libcuda came from (its folder and build)."""
    from fatbin_inspect.compat.targets import resolve_compat
    from fatbin_inspect.system.stack import UserDriver, compat_package

    if not isinstance(udrv, dict) or not isinstance(udrv.get("path"), str):
        return None
    build, api = udrv.get("build"), udrv.get("api_version")
    found = compat_package(
        UserDriver(
            udrv["path"], build if isinstance(build, str) else None, api if isinstance(api, int) else None
        ),
        kdrv.get("version") if isinstance(kdrv, dict) else None,
        local=False,
    )
    if found is None or not found.cuda:
        return None
    try:
        return resolve_compat(found.cuda, source=f"{where}: libcuda from {found.folder}")
    except UsageError:
        return None


def _driver(version: str | None, where: str) -> Driver:
    from fatbin_inspect.compat.targets import resolve_driver

    try:
        return resolve_driver(version)
    except UsageError as exc:
        raise UsageError(f"{where}: {exc}") from None


def _entry_targets(entries: Any, where: str, default_driver: str | None) -> list[Target]:
    """Targets from a list of ``{name, gpu, driver}`` tables."""
    if not isinstance(entries, list):
        raise UsageError(f"{where}: targets: expected a list of {{name, gpu, driver}} tables")
    return [_entry_target(e, f"{where}: targets[{i}]", default_driver) for i, e in enumerate(entries)]


def _entry_fields(
    e: dict[str, Any], here: str, default_driver: str | None
) -> tuple[str, str | None, str | int | None]:
    """(gpu, name, driver) of an entry, each of its kind."""
    gpu, name, driver = e.get("gpu"), e.get("name"), e.get("driver", default_driver)
    if not isinstance(gpu, str) or not gpu.strip():
        raise UsageError(f'{here}: needs gpu = "NAME" (a product name, 8.9 or sm_89)')
    if name is not None and not isinstance(name, str):
        raise UsageError(f"{here}: name: expected a string")
    if driver is not None and not isinstance(driver, (str, int)):
        raise UsageError(f'{here}: driver: expected a version such as "550.54.14" or 550')
    return gpu, name, driver


def _entry_target(e: Any, here: str, default_driver: str | None) -> Target:
    """The target of one ``{name, gpu, driver, host_arch, env}`` table, each key checked."""
    from fatbin_inspect.compat.targets import Target, jit_switches, resolve_gpu

    if not isinstance(e, dict):
        raise UsageError(f"{here}: expected a table {{name, gpu, driver}}")
    unknown = set(e) - ENTRY_KEYS
    if unknown:
        raise UsageError(
            f"{here}: unknown key {sorted(unknown)[0]!r} (known: driver, env, gpu, host_arch, name)"
        )
    gpu, name, driver = _entry_fields(e, here, default_driver)
    try:
        g = resolve_gpu(gpu)
    except UsageError as exc:
        raise UsageError(f"{here}: {exc}") from None
    drv = _driver(None if driver is None else str(driver), here)
    arch = e.get("host_arch")
    if arch is not None and arch not in HOST_ARCHS:
        raise UsageError(f"{here}: host_arch: expected one of {', '.join(HOST_ARCHS)}")
    force, disable = jit_switches(entry_env(e["env"], here) if "env" in e else {})
    return Target(g, drv, force, disable, hosts=(name,) if name else (), host=arch)


def read_targets(
    path: str, default_driver: str | None = None, warn: Callable[[str], None] = _ignore
) -> list[Target]:
    """The targets one ``--targets`` file describes (doctor JSON, a list of them, or fleet TOML),
    read under ``formats.documents``' bounds (a regular file of at most 32 MiB, nesting at most
    64 deep, no NaN, no lone surrogate): every problem is a UsageError naming the file."""
    from fatbin_inspect.errors import InputError
    from fatbin_inspect.formats import documents

    try:
        text = documents.read_text(path, documents.TARGETS_BYTES)
    except InputError as exc:
        if exc.message == "not UTF-8 text":
            raise UsageError(
                f"{path} at offset {exc.offset or 0:#x}: not UTF-8 text: not a doctor report or fleet TOML"
            ) from None
        raise UsageError(_at(path, exc)) from None
    if text.lstrip()[:1] in ("{", "["):  # JSON (a TOML file starts with a key or a [table])
        try:
            doc = documents.loads_json(text)
        except InputError as exc:
            json_error = exc
        else:
            return _json_targets(doc, path, default_driver, warn)
    else:
        json_error = None
    return _toml_targets(text, path, default_driver, json_error)


def _toml_targets(
    text: str, path: str, default_driver: str | None, json_error: InputError | None
) -> list[Target]:
    """The targets of a fleet TOML file (``json_error``: why it did not read as JSON, if it
    looked like JSON: that error is the one to give when it is no TOML either)."""
    from fatbin_inspect.errors import InputError
    from fatbin_inspect.formats import documents

    try:
        toml_doc = documents.loads_toml(text)
    except InputError as exc:
        if json_error is not None and (
            text.lstrip()[:1] == "{" or not json_error.message.startswith("invalid JSON")
        ):
            raise UsageError(_at(path, json_error)) from None
        raise UsageError(f"{path}: neither a doctor JSON report nor valid TOML: {exc}") from None
    tool = toml_doc.get("tool")
    section = tool.get("fatbin-inspect") if isinstance(tool, dict) else None
    entries = toml_doc.get("targets", section.get("targets") if isinstance(section, dict) else None)
    if entries is None:
        raise UsageError(f"{path}: no targets = [{{name, gpu, driver}}, ...] in this TOML file")
    return _entry_targets(entries, path, default_driver)


def _at(path: str, exc: InputError) -> str:
    """``PATH at offset 0x..: message`` of an ``InputError`` about a targets file."""
    if exc.offset is None:
        return f"{path}: {exc.message}"
    return f"{path} at offset {exc.offset:#x}: {exc.message}"


def _json_targets(
    doc: Any, path: str, default_driver: str | None, warn: Callable[[str], None]
) -> list[Target]:
    out: list[Target] = []
    for d in doc if isinstance(doc, list) else [doc]:
        if isinstance(d, dict) and "targets" in d and "stack" not in d:
            out += _entry_targets(d["targets"], path, default_driver)
        elif isinstance(d, dict):
            out += _doctor_targets(d, path, default_driver, warn)
        else:
            raise UsageError(f"{path}: expected doctor reports (JSON objects)")
    return out


def _judged_as(t: Target) -> tuple[object, ...]:
    """What the engine reads of a target: two nodes alike in these get the same verdicts, however
    their GPU was named (``H100`` in a fleet TOML, ``NVIDIA H100 80GB HBM3`` in a doctor report)."""
    from fatbin_inspect.compat import data

    g = t.gpu
    named = g.name in data.forward_compat()["supported_products"]  # R-FWD reads some names
    rest = tuple(getattr(t, f.name) for f in dataclasses.fields(t) if f.name not in ("gpu", "hosts"))
    return (g.cc, g.tegra, g.segment, g.architecture, named, *rest)


def merge(targets: Iterable[Target]) -> tuple[Target, ...]:
    """One target per judged GPU, driver and switches (``_judged_as``), naming every host that
    has it and every product name it was given as (first-seen order: the first name labels it)."""
    groups: dict[tuple[object, ...], tuple[Target, set[str], list[str]]] = {}
    for t in targets:
        first, hosts, names = groups.setdefault(_judged_as(t), (t, set(), []))
        hosts.update(t.hosts)
        names += [n for n in (t.gpu.name, *t.gpu.matched) if n not in names]
    out = []
    for first, hosts, names in groups.values():
        gpu = (
            first.gpu
            if len(names) <= 1 + len(first.gpu.matched)
            else dataclasses.replace(first.gpu, matched=tuple(n for n in names if not n.startswith("CC ")))
        )
        out.append(dataclasses.replace(first, gpu=gpu, hosts=tuple(sorted(hosts))))
    return tuple(out)


GLOB_MAGIC = re.compile(r"[*?[]")


def target_paths(values: Sequence[str]) -> list[str]:
    """``--targets`` values as files: a file as given; a folder's ``*.json`` and ``*.toml``; a
    pattern (quoted, so the shell left it: ``'doctor-*.json'``) expanded here, sorted. A value
    that names nothing is a usage error."""
    out: list[str] = []
    for v in values:
        if os.path.isdir(v):
            found = sorted(
                os.path.join(v, n) for n in os.listdir(v) if n.lower().endswith((".json", ".toml"))
            )
            if not found:
                raise UsageError(f"--targets {v}: a folder without .json or .toml files")
            out += found
        elif os.path.lexists(v) or not GLOB_MAGIC.search(v):
            if not os.path.lexists(v):
                raise UsageError(f"--targets {v}: no such file")
            out.append(v)
        else:
            found = sorted(glob.glob(v))
            if not found:
                raise UsageError(f"--targets {v!r}: the pattern matches no file")
            out += found
    return list(dict.fromkeys(out))


def policy_targets(
    items: Sequence[Any],
    source: str | None,
    default_driver: str | None,
    warn: Callable[[str], None] = _ignore,
) -> list[Target]:
    """``[tool.fatbin-inspect] targets``: tables, and globs of files relative to ``source``."""
    where = f"{source or 'pyproject.toml'} [tool.fatbin-inspect]"
    base = os.path.dirname(os.path.abspath(source)) if source else os.getcwd()
    out: list[Target] = []
    tables = [dict(i) for i in items if not isinstance(i, str)]  # Policy keeps tables as item tuples
    if tables:
        out += _entry_targets(tables, where, default_driver)
    for pattern in (i for i in items if isinstance(i, str)):
        found = sorted(glob.glob(os.path.join(base, pattern)))
        if not found:
            raise UsageError(f"{where}: targets: {pattern!r} matches no file (relative to {base})")
        for path in found:
            out += read_targets(path, default_driver, warn)
    return out


def resolve_all(
    gpus: Sequence[str],
    driver: str | None,
    env: dict[str, str] | None,
    target_files: Sequence[str],
    fallback: Callable[[], list[Target]] | None = None,
    compat: str | None = None,
    warn: Callable[[str], None] = _ignore,
) -> tuple[Target, ...]:
    """``--gpu`` targets (one ``--driver``), then every ``--targets`` file's; ``fallback`` (the
    pyproject.toml's) when neither is given. The JIT switches of ``env`` (on top of each
    target's own) and the ``--compat`` package (R-FWD) apply to all of them."""
    from fatbin_inspect.compat.targets import resolve_targets, wants_local
    from fatbin_inspect.system.stack import local_devices

    local = local_devices(gpus, driver)
    found: list[Target] = list(resolve_targets(list(gpus), driver, env, local, compat)) if gpus else []
    file_driver = local.driver if wants_local((), driver)[1] and local.driver else driver
    for path in target_paths(target_files):
        found += read_targets(path, file_driver, warn)
    if not found and not target_files and fallback is not None:
        found = fallback()
    if not found:
        if target_files:
            raise UsageError("--targets: no GPU in any of the files given")
        resolve_targets([], driver)  # raises the "no --gpu given" error
    return merge(_for_all(found, env, compat))


def _for_all(found: list[Target], env: dict[str, str] | None, compat: str | None) -> list[Target]:
    """``found`` with the JIT switches of ``env`` (on top of their own) and the ``--compat``
    package."""
    from fatbin_inspect.compat.targets import jit_switches

    force, disable = jit_switches(env or {})
    found = [
        dataclasses.replace(
            t, force_ptx_jit=t.force_ptx_jit or force, disable_ptx_jit=t.disable_ptx_jit or disable
        )
        for t in found
    ]
    if compat:
        from fatbin_inspect.compat.targets import resolve_compat

        pkg = resolve_compat(compat)
        found = [dataclasses.replace(t, compat=pkg) for t in found]
    return found


def nearest_policy_targets(
    driver: str | None, warn: Callable[[str], None] = _ignore
) -> Callable[[], list[Target]]:
    """The fallback for ``check``: the targets of the nearest pyproject.toml, if it lists any."""

    def load() -> list[Target]:
        from fatbin_inspect.release import policy

        path = policy.find_pyproject(warn=warn)
        if path is None:
            return []
        items = policy.read_section(path).get("targets")
        if items is None:
            return []
        return policy_targets(policy.normalize({"targets": items}, path)["targets"], path, driver, warn)

    return load
