#!/usr/bin/env python3
"""Regenerates the json-sort-keys-utf8-v1 fixtures for cairn-interop.s sort_keys test.

Each output line is a JSON object (written ASCII-only so the file is safe to diff):
  {"input": <JSON text>, "python": <json.dumps(json.loads(input), sort_keys=True,
   ensure_ascii=False, separators=(",", ":"))>}
and, for the few inputs that serde_json cannot represent the way Python does, also
  "rust": <what cairn's writer produces from serde_json's value>, "divergence": <why>.

Usage (from the repository root):
  python3 crates/interop/tests/data/gen_python_fixtures.py crates/interop/tests/data
The output is deterministic: rerunning it must not change the files.
"""

import json
import math
import random
import struct
import sys
from pathlib import Path


def canonical(text):
    return json.dumps(
        json.loads(text), sort_keys=True, ensure_ascii=False, separators=(",", ":")
    )


def deep(levels):
    text = "0"
    for i in range(levels):
        text = "[" + text + "]" if i % 2 else '{"k%d":%s}' % (i, text)
    return text


CASES = [
    # Structure.
    '{"b":1,"a":{"d":[1,2,{"z":null,"y":true}],"c":false}}',
    "{}",
    "[]",
    "[[],{},[[]],{\"a\":{}}]",
    ' { "spaced" : [ 1 , 2 ] ,\n\t"x" : { } } ',
    '{"dup":1,"dup":2}',
    "null",
    "true",
    "false",
    '"top-level string"',
    deep(100),
    # Keys: non-BMP, combining marks, case, empty, escapes in keys.
    '{"\\ud83d\\ude00":1,"\\ufb33":2,"z":3,"Z":4,"":5,"a":6,"\\u00e9":7,"e\\u0301":8}',
    '{"\U0001F600":1,"\uFB33":2,"\u00e9":3,"e\u0301":4,"\u00c5":5,"A\u030a":6}',
    '{"\\n":1,"\\"":2,"\\\\":3,"\\u0000":4,"\\u007f":5,"~":6}',
    '{"\u4e2d\u6587":1,"\u0627\u0644\u0639\u0631\u0628\u064a\u0629":2,"\U00010000":3,"\uffff":4}',
    # Strings: controls, DEL, line separators, quotes, backslashes, solidus.
    '"' + "".join("\\u%04x" % c for c in range(0x20)) + '"',
    '"\\u007f\\u0080\\u009f\\u00a0\\u00ad\\u2028\\u2029\\ufeff\\ufffd"',
    '"quote \\" backslash \\\\ solidus \\/ slash / tab \\t"',
    '"\\b\\f\\n\\r\\t"',
    '"non-BMP \\ud834\\udd1e \U0001F600 literal and escaped \\ud83d\\ude00"',
    '"combining A\\u030a vs \\u00c5, e\\u0301 vs \\u00e9"',
    '"<script>\\u003c/script> & \\u0026 \' apostrophe"',
    # Integers.
    "[0,-1,1,9007199254740992,9007199254740993,-9007199254740992]",
    "[9223372036854775807,-9223372036854775808,18446744073709551615]",
    "[4294967296,-4294967296,1000000000000000000]",
    # Floats.
    "[0.0,-0.0,1.0,1.5,100.0,1e15,1e16,1e-4,1e-5]",
    "[1.7976931348623157e308,5e-324,2.2250738585072014e-308,0.1,0.3333333333333333]",
    "[123456789.123,1e22,-2.5e-7,1e21,1e23,9999999999999998.0,0.00009999999999999999]",
    "[1E2,1.0e0,1e0,0e0,1E+2,1e-0,-1E-2,1.000000,0.10000000000000001,12345678901234567890.0]",
    "[2.5,-3.75,0.5,1e100,1.5e300,4.35,0.000123,1234567890123456.7,12345678901234567.0]",
    "[0.30000000000000004,1.1,2.675,1e-7,1e-320,4.9406564584124654e-324]",
    "[3.141592653589793,2.718281828459045,6.02214076e23,1.602176634e-19]",
    # Numbers inside objects.
    '{"n":{"float":-0.0,"int":0,"exp":1e3}}',
]

# Inputs Python reads differently from serde_json; the writer can only see serde_json's value.
DIVERGENCES = [
    ("-0", "-0.0", "serde_json reads the literal -0 as the float -0.0; Python as the integer 0"),
    ("[18446744073709551616]", "[1.8446744073709552e+19]",
     "serde_json reads integers beyond u64 as f64; Python keeps them as integers"),
    ("[-9223372036854775809]", "[-9.223372036854776e+18]",
     "serde_json reads integers below i64::MIN as f64; Python keeps them as integers"),
    ("123456789012345678901234567890", "1.2345678901234568e+29",
     "serde_json reads integers beyond u64 as f64; Python keeps them as integers"),
]


def float_cases(rng):
    values = []
    # Random bit patterns: every exponent range, subnormals included.
    while len(values) < 250:
        (x,) = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))
        if math.isfinite(x):
            values.append(x)
    # Values around the positional/scientific switch and at every decimal scale.
    for e in range(-8, 20):
        base = 10.0 ** e
        values += [base, math.nextafter(base, 0.0), math.nextafter(base, math.inf), -base]
    for _ in range(60):
        values.append(round(rng.uniform(-1e6, 1e6), rng.randrange(0, 8)))
    for _ in range(40):
        values.append(rng.random() * 10.0 ** rng.randrange(-30, 30))
    values += [2.0 ** k for k in range(-1074, 1024, 37)]
    cases = []
    for i, x in enumerate(values):
        # Alternate spellings so the parser's rounding is exercised, not just the writer.
        text = repr(x) if i % 2 else "%.17e" % x
        if i % 7 == 0:
            text = "%.25e" % x
        cases.append(text)
    # Ties between two shortest digit strings: Python picks the even one (Rust's `{:e}` does
    # not), plus other classic cases.
    cases += [
        "568240000723932.25", "568240000723932.3", "0.5000000000000001", "2.675",
        "1.0000000000000002e+16", "9007199254740993.0", "123456789012345.675", "1e23",
        "5e-324", "0.30000000000000004",
    ]
    return cases


def line(record):
    return json.dumps(record, ensure_ascii=True, sort_keys=True) + "\n"


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent)
    rng = random.Random(8785)
    with open(out / "python_sort_keys.jsonl", "w", encoding="ascii", newline="\n") as f:
        for text in CASES:
            f.write(line({"input": text, "python": canonical(text)}))
        for text, rust, why in DIVERGENCES:
            python = canonical(text)
            assert python != rust, text
            f.write(line({"input": text, "python": python, "rust": rust, "divergence": why}))
    with open(out / "python_floats.jsonl", "w", encoding="ascii", newline="\n") as f:
        for text in float_cases(rng):
            f.write(line({"input": text, "python": canonical(text)}))


if __name__ == "__main__":
    main()
