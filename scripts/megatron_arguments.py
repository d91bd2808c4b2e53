#!/usr/bin/env python3
"""The command-line argument names Megatron-LM's training parser accepts, read from its source.

Usage: scripts/megatron_arguments.py GIT_DIR [COMMIT] > tests/cli/data/megatron_arguments.txt

GIT_DIR is a clone of NVIDIA/Megatron-LM (a bare one will do). The names come from
megatron/training/arguments.py: every literal '--name' it passes to add_argument, and the
fields of each dataclass it hands to ArgumentGroupFactory (megatron/training/argument_utils.py
names a field's flag `--field-name`, or the "arg_names" of its argparse_meta, and a bool that
defaults to True `--no-field-name` / `--disable-field-name`), minus the fields it excludes.
The output holds names and the commit only: `planner export megatron` writes no argument that
is not among them (tests/cli/cases/export_megatron.t).
"""
import ast
import re
import subprocess
import sys


def show(git, commit, path):
    return subprocess.run(["git", "--git-dir", git, "show", f"{commit}:{path}"],
                          capture_output=True, text=True, check=True).stdout


def find_class(git, commit, name):
    """(path, ast.ClassDef) of `class name` under megatron/."""
    out = subprocess.run(["git", "--git-dir", git, "grep", "-l", f"^class {name}\\b", commit,
                          "--", "megatron/"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        path = line.split(":", 1)[1]
        tree = ast.parse(show(git, commit, path))
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == name:
                return path, node
    return None, None


def literal_names(call):
    """The "arg_names" of a field(metadata={"argparse_meta": {...}}) call, if any."""
    for kw in getattr(call, "keywords", []):
        if kw.arg == "metadata" and isinstance(kw.value, ast.Dict):
            for k, v in zip(kw.value.keys, kw.value.values):
                if isinstance(k, ast.Constant) and k.value == "argparse_meta" and \
                        isinstance(v, ast.Dict):
                    for k2, v2 in zip(v.keys, v.values):
                        if isinstance(k2, ast.Constant) and k2.value == "arg_names":
                            return [e.value for e in v2.elts if isinstance(e, ast.Constant)]
    return None


def field_flags(git, commit, name, seen):
    """Flags of every field of dataclass `name` and its bases."""
    if name in seen:
        return {}
    seen.add(name)
    path, cls = find_class(git, commit, name)
    if cls is None:
        return {}
    flags = {}
    for base in cls.bases:
        if isinstance(base, ast.Name):
            flags.update(field_flags(git, commit, base.id, seen))
    for node in cls.body:
        if not isinstance(node, ast.AnnAssign) or not isinstance(node.target, ast.Name):
            continue
        field = node.target.id
        names = literal_names(node.value) if isinstance(node.value, ast.Call) else None
        dashed = field.replace("_", "-")
        if names:
            flags[field] = names
        elif isinstance(node.value, ast.Constant) and node.value.value is True:
            flags[field] = [f"--no-{dashed}", f"--disable-{dashed}"]
        else:
            flags[field] = [f"--{dashed}"]
    return flags


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    git = sys.argv[1]
    commit = sys.argv[2] if len(sys.argv) > 2 else "HEAD"
    commit = subprocess.run(["git", "--git-dir", git, "rev-parse", commit], capture_output=True,
                            text=True, check=True).stdout.strip()
    source = show(git, commit, "megatron/training/arguments.py")
    names = set(re.findall(r"""['"](--[a-z0-9][a-z0-9-]*)['"]""", source))
    tree = ast.parse(source)
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef):
            continue
        assigned = {}
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                    isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.List):
                assigned[node.targets[0].id] = [e.value for e in node.value.elts
                                                if isinstance(e, ast.Constant)]
        for node in ast.walk(fn):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and
                    node.func.id == "ArgumentGroupFactory" and node.args and
                    isinstance(node.args[0], ast.Name)):
                continue
            exclude = []
            for kw in node.keywords:
                if kw.arg == "exclude":
                    if isinstance(kw.value, ast.List):
                        exclude = [e.value for e in kw.value.elts if isinstance(e, ast.Constant)]
                    elif isinstance(kw.value, ast.Name):
                        exclude = assigned.get(kw.value.id, [])
            for field, flags in field_flags(git, commit, node.args[0].id, set()).items():
                if field not in exclude:
                    names.update(flags)
    print(f"# Megatron-LM {commit}: the argument names megatron/training/arguments.py accepts")
    print("# (scripts/megatron_arguments.py; names only)")
    for n in sorted(names):
        print(n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
