#!/usr/bin/python3
"""Writes newer_schema_table.cpp: the schema versions of ONNX opsets 20 to 28 and of ai.onnx.ml
4 and 5 (onnx 1.15 to 1.23), which Debian's onnx 1.12 does not know.

Run with the onnx of the current backend suite (tests/conformance/onnx_current pins it and
creates the venv):
    BUILD/onnx-current-venv/bin/python core/src/schemas/generate_newer_schema_table.py [OUTPUT]

Each row carries a comment saying what that version changed against the previous one (new op,
only wider type lists, or new attributes/inputs). A version whose change is more than types is a
semantic change: every device that claims the op must implement it or refuse the node by its
attributes; schema_table_test lists those versions so that a new one cannot slip in unreviewed.
"""
import os
import sys

import onnx
import onnx.defs

FIRST = {"": 20, "ai.onnx.ml": 4}
VARIADIC = 2147483647
OUTPUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "newer_schema_table.cpp")


def count(value):
    return -1 if value >= VARIADIC else value


def short(type_str):
    return type_str.replace("tensor(", "").replace(")", "")


def change(schema, previous):
    if previous is None:
        return "new op"
    attrs = sorted(set(schema.attributes) - set(previous.attributes))
    removed = sorted(set(previous.attributes) - set(schema.attributes))
    ins = [i.name for i in schema.inputs]
    old_ins = [i.name for i in previous.inputs]
    parts = []
    if attrs:
        parts.append("attributes " + ", ".join(attrs) + " added")
    if removed:
        parts.append("attributes " + ", ".join(removed) + " removed")
    if ins != old_ins:
        parts.append("inputs now " + ", ".join(ins))
    if parts:
        return "; ".join(parts)
    old = {t.type_param_str: set(t.allowed_type_strs) for t in previous.type_constraints}
    added = set()
    for t in schema.type_constraints:
        added |= {short(x) for x in set(t.allowed_type_strs) - old.get(t.type_param_str, set())}
    if added:
        return "types " + ", ".join(sorted(added)) + " added"
    return "documentation only"


def main():
    output = sys.argv[1] if len(sys.argv) > 1 else OUTPUT
    history = {}
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain in FIRST:
            history.setdefault((s.domain, s.name), []).append(s)
    rows = []
    for (domain, name), versions in history.items():
        versions.sort(key=lambda s: s.since_version)
        for i, s in enumerate(versions):
            if s.since_version < FIRST[domain]:
                continue
            rows.append((domain, name, s, change(s, versions[i - 1] if i else None)))
    rows.sort(key=lambda r: (r[0], r[1], r[2].since_version))
    lines = [
        "// GENERATED FILE, do not edit. Regenerate with",
        "//   BUILD/onnx-current-venv/bin/python core/src/schemas/generate_newer_schema_table.py",
        f"// from onnx {onnx.__version__}: the versions of opsets "
        f"{FIRST['']}..{onnx.defs.onnx_opset_version()} and ai.onnx.ml {FIRST['ai.onnx.ml']}+.",
        "// Columns: domain, op_type, since_version, min/max inputs, min/max outputs (-1 =",
        "// variadic), deprecated; the comment says what the version changed.",
        '#include "schema_rows.hpp"',
        "",
        "namespace loom::core {",
        "namespace {",
        "",
        "constexpr SchemaRow kNewerRows[] = {",
    ]
    for domain, name, s, what in rows:
        lines.append(
            f'    {{"{domain}", "{name}", {s.since_version}, {s.min_input}, '
            f"{count(s.max_input)}, {s.min_output}, {count(s.max_output)}, "
            f"{'true' if s.deprecated else 'false'}}},  // {what}"
        )
    lines += [
        "};",
        "",
        "}  // namespace",
        "",
        "std::span<const SchemaRow> newer_schema_rows() {",
        "  return kNewerRows;",
        "}",
        "",
        "}  // namespace loom::core",
        "",
    ]
    with open(output, "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()
