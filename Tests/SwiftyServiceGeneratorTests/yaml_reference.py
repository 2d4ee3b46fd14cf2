#!/usr/bin/env python3
"""Reads YAML files with PyYAML and prints each as a typed canonical JSON value, one line per file, for the
YAML reader's tests to compare with (YAMLReferenceTests).

PyYAML is the reference for the syntax (indentation, flow and block collections, quoting, folding, block
scalars, anchors, aliases, merge keys). Its default resolver implements YAML 1.1, where `yes` is a bool,
`1_000` an int and `2019-01-01` a date; descriptions are YAML 1.2, so scalars are resolved here by the
YAML 1.2 core schema through PyYAML's own resolver and constructor hooks, as the Swift reader does.

    python3 yaml_reference.py FILE...       (or the files' paths on standard input, one a line)

A value is ["n"], ["b", bool], ["i", "123"], ["f", "1.5" | "inf" | "-inf" | "nan"], ["s", text],
["a", [values]] or ["m", [[key, value], ...]] (keys as text, in the order PyYAML gives them).
"""
import json
import math
import re
import sys

import yaml


class Core12Resolver(yaml.resolver.BaseResolver):
    pass


def implicit(tag, pattern, first):
    Core12Resolver.add_implicit_resolver(tag, re.compile(pattern, re.X), list(first))


implicit("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""])
implicit("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF")
implicit("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789")
implicit(
    "tag:yaml.org,2002:float",
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
    "-+0123456789.",
)
Core12Resolver.add_implicit_resolver("tag:yaml.org,2002:merge", re.compile(r"^<<$"), ["<"])


class Core12Constructor(yaml.constructor.SafeConstructor):
    pass


def construct_int(loader, node):
    text = loader.construct_scalar(node)
    if text.startswith("0o"):
        return int(text[2:], 8)
    if text.startswith("0x"):
        return int(text[2:], 16)
    return int(text, 10)


def construct_float(loader, node):
    text = loader.construct_scalar(node)
    lowered = text.lower()
    if lowered in (".inf", "+.inf"):
        return math.inf
    if lowered == "-.inf":
        return -math.inf
    if lowered == ".nan":
        return math.nan
    return float(text)


def construct_bool(loader, node):
    return loader.construct_scalar(node).lower() == "true"


def construct_mapping(loader, node):
    # As SafeConstructor does (merge keys flattened first), but keeping the order and refusing a key twice,
    # which the Swift reader refuses too.
    loader.flatten_mapping(node)
    pairs = []
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        pairs.append((key, loader.construct_object(value_node, deep=True)))
    return Pairs(pairs)


class Pairs(list):
    pass


Core12Constructor.add_constructor("tag:yaml.org,2002:int", construct_int)
Core12Constructor.add_constructor("tag:yaml.org,2002:float", construct_float)
Core12Constructor.add_constructor("tag:yaml.org,2002:bool", construct_bool)
Core12Constructor.add_constructor("tag:yaml.org,2002:map", construct_mapping)
# Other tags are read as if untagged, as the Swift reader does.
Core12Constructor.add_constructor("tag:yaml.org,2002:timestamp", yaml.constructor.SafeConstructor.construct_yaml_str)
Core12Constructor.add_constructor("tag:yaml.org,2002:binary", yaml.constructor.SafeConstructor.construct_yaml_str)


class Core12Loader(
    yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser, yaml.composer.Composer, Core12Constructor,
    Core12Resolver,
):
    def __init__(self, stream):
        yaml.reader.Reader.__init__(self, stream)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)
        yaml.composer.Composer.__init__(self)
        Core12Constructor.__init__(self)
        Core12Resolver.__init__(self)


if yaml.__with_libyaml__:
    # PyYAML's parser in C (libyaml), with the same resolver and constructor: ten times faster on the
    # multi-megabyte descriptions, the same values.
    class Core12Loader(yaml.cyaml.CParser, Core12Constructor, Core12Resolver):  # noqa: F811
        def __init__(self, stream):
            yaml.cyaml.CParser.__init__(self, stream)
            Core12Constructor.__init__(self)
            Core12Resolver.__init__(self)


def key_text(key):
    if key is None:
        return "null"
    if key is True:
        return "true"
    if key is False:
        return "false"
    if isinstance(key, float):
        return float_text(key)
    return str(key)


def float_text(value):
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


def canonical(value):
    if value is None:
        return ["n"]
    if isinstance(value, bool):
        return ["b", value]
    if isinstance(value, int):
        return ["i", str(value)]
    if isinstance(value, float):
        return ["f", float_text(value)]
    if isinstance(value, str):
        return ["s", value]
    if isinstance(value, Pairs):
        # Dictionary semantics: first place, last value (the merged pairs come first).
        order, values = [], {}
        for key, item in value:
            text = key_text(key)
            if text not in values:
                order.append(text)
            values[text] = item
        return ["m", [[key, canonical(values[key])] for key in order]]
    if isinstance(value, list):
        return ["a", [canonical(item) for item in value]]
    raise TypeError(f"unexpected {type(value).__name__}")


for path in sys.argv[1:] or [line.rstrip("\n") for line in sys.stdin if line.strip()]:
    with open(path, "rb") as stream:
        documents = list(yaml.load_all(stream, Loader=Core12Loader))
    print(json.dumps([canonical(document) for document in documents], ensure_ascii=False))
