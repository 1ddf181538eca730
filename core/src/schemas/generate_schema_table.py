#!/usr/bin/python3
"""Writes onnx_schema_table.cpp: every schema version of the ONNX default domain and of
ai.onnx.ml that the installed `onnx` package defines (Debian 12's python3-onnx 1.12: opsets
1..17, ai.onnx.ml 1..3).

Run from anywhere with Debian's Python (the one that has onnx):
    /usr/bin/python3 core/src/schemas/generate_schema_table.py [OUTPUT]
(OUTPUT defaults to onnx_schema_table.cpp beside this script; the table test writes a copy
elsewhere and compares.)
The output depends only on the onnx version, is sorted, and carries no date, so running it again
reproduces the committed file byte for byte. Opset-18 additions (ONNX 1.13) live in the
hand-written opset18_schema_table.cpp because onnx 1.12 does not know them.
"""
import os
import sys

import onnx
import onnx.defs

DOMAINS = ("", "ai.onnx.ml")
VARIADIC = 2147483647  # what onnx reports as max_input/max_output of variadic ops
OUTPUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "onnx_schema_table.cpp")


def count(value):
    return -1 if value >= VARIADIC else value


def main():
    rows = sorted(
        (s for s in onnx.defs.get_all_schemas_with_history() if s.domain in DOMAINS),
        key=lambda s: (s.domain, s.name, s.since_version),
    )
    lines = [
        "// GENERATED FILE, do not edit. Regenerate with",
        "//   /usr/bin/python3 core/src/schemas/generate_schema_table.py",
        f"// from onnx {onnx.__version__} (onnx.defs.get_all_schemas_with_history(), domains "
        + ", ".join(f'"{d}"' for d in DOMAINS) + ").",
        "// Columns: domain, op_type, since_version, min/max inputs, min/max outputs (-1 =",
        "// variadic), deprecated.",
        '#include "schema_rows.hpp"',
        "",
        "namespace loom::core {",
        "namespace {",
        "",
        "constexpr SchemaRow kOnnxRows[] = {",
    ]
    for s in rows:
        lines.append(
            f'    {{"{s.domain}", "{s.name}", {s.since_version}, {s.min_input}, '
            f"{count(s.max_input)}, {s.min_output}, {count(s.max_output)}, "
            f"{'true' if s.deprecated else 'false'}}},"
        )
    lines += [
        "};",
        "",
        "}  // namespace",
        "",
        "std::span<const SchemaRow> onnx_schema_rows() {",
        "  return kOnnxRows;",
        "}",
        "",
        "}  // namespace loom::core",
        "",
    ]
    output = sys.argv[1] if len(sys.argv) > 1 else OUTPUT
    with open(output, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    print(f"wrote {len(rows)} schemas to {output}", file=sys.stderr)


if __name__ == "__main__":
    main()
