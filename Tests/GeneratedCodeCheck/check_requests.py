#!/usr/bin/env python3
"""Holds the requests generated clients build against the descriptions they were generated from.

scripts/check-generated generates a client from each description, compiles it, and runs every case of every
endpoint enum with sample values (its `samples`), writing one JSON line per request: the document, the
operation (`GET /pets/{petId}`), and the method, URL and headers of the URLRequest (or the error). This reads
each description itself, with PyYAML and a reference resolver of its own (nothing of the generator), works
out the request the description describes for those sample values, and compares:

- every operation of the description is generated, or listed as skipped with a reason in the report;
- the method; the URL: the server's base, the path with its parameters substituted and percent-encoded as one
  segment each (RFC 3986 pchar), the query per `style` and `explode`; the header and cookie parameters; the
  body's content type.

The sample values follow the rules SampleEmitter documents (Sources/SwiftyServiceGeneratorCore/Emit).

    check_requests.py --requests requests.jsonl --document NAME DESCRIPTION REPORT [--document ...]
"""
import argparse
import base64
import json
import os
import re
import sys
import urllib.parse

import yaml

METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]
PCHAR_SAFE = "!$&'()*+,;=:@-._~"
RELATIVE_BASE = "https://relative.invalid"


class Description:
    def __init__(self, path):
        self.files = {}
        self.root_path = os.path.realpath(path)
        self.root = self.load(self.root_path)

    def load(self, path):
        if path not in self.files:
            with open(path, "rb") as stream:
                text = stream.read()
            if path.endswith(".json"):
                self.files[path] = json.loads(text)
            else:
                self.files[path] = yaml.safe_load(text)
        return self.files[path]

    def resolve(self, node, base):
        """(node, file) with references followed."""
        seen = 0
        while isinstance(node, dict) and isinstance(node.get("$ref"), str):
            reference = node["$ref"]
            file_part, _, pointer = reference.partition("#")
            if file_part:
                base = os.path.realpath(os.path.join(os.path.dirname(base), urllib.parse.unquote(file_part)))
            node = self.load(base)
            for token in pointer.split("/")[1:]:
                token = urllib.parse.unquote(token).replace("~1", "/").replace("~0", "~")
                node = node[int(token)] if isinstance(node, list) else node[token]
            seen += 1
            if seen > 100:
                raise ValueError(f"reference loop at {reference}")
        return node, base


def sample_int(name):
    return 1 + sum(name.encode("utf-8")) % 97


class Samples:
    """The sample values of SampleEmitter, worked out from the schemas."""

    def __init__(self, description):
        self.description = description

    def schema(self, node, base):
        """The schema a value of `node` is made by: references, single-reference allOf and unions of one
        resolved, as the type mapper does."""
        node, base = self.description.resolve(node, base)
        if not isinstance(node, dict):
            return {}, base
        parts = node.get("allOf")
        if parts:
            structural = [part for part in parts if self.is_structural(part)]
            if len(structural) == 1 and "$ref" in structural[0] and not node.get("properties"):
                return self.schema(structural[0], base)
            return node, base
        alternatives = node.get("oneOf") or node.get("anyOf")
        if alternatives and any(self.is_structural(alternative) for alternative in alternatives):
            real = [alternative for alternative in alternatives if not self.is_null(alternative)]
            if real:
                return self.schema(real[0], base)
        return node, base

    @staticmethod
    def is_structural(node):
        keys = ["$ref", "type", "properties", "items", "allOf", "oneOf", "anyOf", "enum", "additionalProperties", "const"]
        return isinstance(node, dict) and any(key in node for key in keys)

    @staticmethod
    def is_null(node):
        return isinstance(node, dict) and (node.get("type") == "null" or node.get("enum") == [None])

    @staticmethod
    def types(node):
        kind = node.get("type")
        if isinstance(kind, list):
            return [value for value in kind if value != "null"]
        return [] if kind in (None, "null") else [kind]

    def kind(self, node, base):
        """('scalar', text-maker) | ('array', element) | ('object', properties) | ('data',) | ('any',)."""
        node, base = self.schema(node, base)
        types = self.types(node)
        values = node.get("enum", [node["const"]] if "const" in node else None)
        if values is not None and len(types) <= 1 and (not types or types[0] not in ("boolean", "number", "object", "array")):
            present = [value for value in values if value is not None]
            if present:
                return ("enum", present, node, base)
        if len(types) > 1:
            first = dict(node)
            first["type"] = types[0]
            return self.kind(first, base)
        kind = types[0] if types else ("object" if "properties" in node or "additionalProperties" in node else "array" if "items" in node else "")
        if kind == "string":
            form = node.get("format")
            if form in ("byte", "binary") or node.get("contentEncoding") == "base64":
                return ("data",)
            return ("string", form)
        if kind in ("integer", "number", "boolean"):
            return (kind,)
        if kind == "array":
            return ("array", node.get("items", {}), base)
        if kind == "object" or node.get("allOf"):
            return ("object", node, base)
        return ("any",)

    def is_scalar(self, kind):
        return kind[0] in ("enum", "string", "integer", "number", "boolean")

    def text(self, kind, name, place, second=False):
        """A scalar sample as text."""
        tag = kind[0]
        if tag == "enum":
            values = kind[1]
            value = values[1] if second and len(values) > 1 else values[0]
            return self.plain(value)
        if tag == "string":
            form = kind[1]
            if form == "date-time":
                return "2023-11-14T22:13:20Z"
            if form == "date":
                return "2023-11-14"
            if form == "uuid":
                return "00000000-0000-4000-8000-000000000001"
            if second:
                return f"{name}-2"
            return f"{name}-1" if place in ("header", "cookie") else f"{name}-ä b/c"
        if tag == "integer":
            return str(sample_int(name) + (1 if second else 0))
        if tag == "number":
            return f"{sample_int(name) + (1 if second else 0)}.5"
        if tag == "boolean":
            return "false" if second else "true"
        raise ValueError(f"not a scalar: {kind}")

    @staticmethod
    def plain(value):
        if value is True:
            return "true"
        if value is False:
            return "false"
        return str(value)

    def value(self, node, base, name, place, depth=0):
        """The sample as JSON would hold it (what `parameterValue` makes of it)."""
        kind = self.kind(node, base)
        tag = kind[0]
        if tag == "enum":
            return kind[1][0]
        if tag == "string":
            return self.text(kind, name, place)
        if tag == "integer":
            return sample_int(name)
        if tag == "number":
            return sample_int(name) + 0.5
        if tag == "boolean":
            return True
        if tag == "data":
            return base64.b64encode(b"sample").decode()
        if tag == "array":
            element = self.kind(kind[1], kind[2])
            first = self.value(kind[1], kind[2], name, place, depth + 1)
            if self.is_scalar(element):
                return [first, self.second_value(element, name, place)]
            return [first]
        if tag == "object":
            return self.object_value(kind[1], kind[2], place, depth)
        return "sample"

    def second_value(self, kind, name, place):
        tag = kind[0]
        if tag == "enum":
            values = kind[1]
            return values[1] if len(values) > 1 else values[0]
        if tag == "integer":
            return sample_int(name) + 1
        if tag == "number":
            return sample_int(name) + 1.5
        if tag == "boolean":
            return False
        return self.text(kind, name, place, second=True)

    def properties(self, node, base):
        """Merged properties and required names of an object schema (allOf parts flattened)."""
        properties, required, seen = [], set(), set()

        def collect(part, part_base):
            part, part_base = self.description.resolve(part, part_base)
            if not isinstance(part, dict) or id(part) in seen:
                return
            seen.add(id(part))
            for sub in part.get("allOf", []):
                collect(sub, part_base)
            for key, value in (part.get("properties") or {}).items():
                for index, (existing, _, _) in enumerate(properties):
                    if existing == key:
                        properties[index] = (key, value, part_base)
                        break
                else:
                    properties.append((key, value, part_base))
            required.update(part.get("required") or [])

        collect(node, base)
        return properties, required

    def object_value(self, node, base, place, depth):
        properties, required = self.properties(node, base)
        if not properties:
            additional = node.get("additionalProperties")
            if isinstance(additional, dict) and additional:
                return {"key": self.value(additional, base, "key", place, depth + 1)}
            return {"key": "sample"}
        result = {}
        for key, schema, schema_base in properties:
            kind = self.kind(schema, schema_base)
            resolved, _ = self.description.resolve(schema, schema_base)
            resolved = resolved if isinstance(resolved, dict) else {}
            optional = (
                key not in required
                or self.nullable(schema, schema_base)
                or resolved.get("readOnly")
                or resolved.get("writeOnly")
            )
            # A union is a type of its own in Swift: not a scalar, whatever its first case.
            include = not self.is_union(schema, schema_base) and (
                self.is_scalar(kind) or (kind[0] == "array" and self.is_scalar(self.kind(kind[1], kind[2]))))
            if include or not optional:
                result[key] = self.value(schema, schema_base, key, place, depth + 1)
        return result

    def is_union(self, node, base):
        node, _ = self.description.resolve(node, base)
        if not isinstance(node, dict):
            return False
        alternatives = node.get("oneOf") or node.get("anyOf") or []
        if not any(self.is_structural(alternative) for alternative in alternatives):
            return False
        return len([alternative for alternative in alternatives if not self.is_null(alternative)]) > 1

    def nullable(self, node, base):
        resolved, _ = self.description.resolve(node, base)
        if not isinstance(resolved, dict):
            return False
        if resolved.get("nullable") is True or (isinstance(node, dict) and node.get("nullable") is True):
            return True
        kind = resolved.get("type")
        if isinstance(kind, list) and "null" in kind:
            return True
        if None in (resolved.get("enum") or []):
            return True
        return any(self.is_null(alternative) for alternative in (resolved.get("oneOf") or resolved.get("anyOf") or []))


def query_text(value):
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def flatten(key, value, pairs):
    """How the query writer writes a nested value: `key[member]`, arrays repeating the key."""
    if isinstance(value, dict):
        for member in sorted(value):
            flatten(f"{key}[{member}]", value[member], pairs)
    elif isinstance(value, list):
        for element in value:
            flatten(key, element, pairs)
    else:
        pairs.append((key, query_text(value)))


def styled(value, explode):
    """styledText: arrays joined by commas, objects as key,value or key=value pairs (keys sorted)."""
    if isinstance(value, list):
        return ",".join(query_text(element) for element in value)
    if isinstance(value, dict):
        keys = sorted(value)
        if explode:
            return ",".join(f"{key}={query_text(value[key])}" for key in keys)
        return ",".join(f"{key},{query_text(value[key])}" for key in keys)
    return query_text(value)


def is_json(media):
    base = media.split(";")[0].strip().lower()
    return base in ("application/json", "text/json") or base.endswith("+json") or (
        base.startswith("application/") and base.endswith("json"))


class Operation:
    def __init__(self, method, path, node, base, path_item, path_base):
        self.method, self.path, self.node, self.base = method, path, node, base
        self.path_item, self.path_base = path_item, path_base

    @property
    def name(self):
        return f"{self.method.upper()} {self.path}"


def operations(description):
    result = []
    root = description.root
    for path, item in (root.get("paths") or {}).items():
        if not path.startswith("/"):
            continue
        item, item_base = description.resolve(item, description.root_path)
        for method in METHODS:
            if method in item:
                node, base = description.resolve(item[method], item_base)
                result.append(Operation(method, path, node, base, item, item_base))
    return result


SWAGGER_SCHEMA_KEYS = ["type", "format", "items", "enum", "default", "minimum", "maximum", "pattern", "minLength", "maxLength"]


def swagger_parameter(parameter):
    """A Swagger 2.0 parameter as OpenAPI 3 writes one: its type keywords a schema, collectionFormat a style."""
    place = parameter["in"]
    schema = {key: parameter[key] for key in SWAGGER_SCHEMA_KEYS if key in parameter}
    if schema.get("type") == "file":
        schema = {"type": "string", "format": "binary"}
    form = parameter.get("collectionFormat", "csv")
    if place == "query":
        style = {"ssv": "spaceDelimited", "pipes": "pipeDelimited"}.get(form, "form")
    else:
        style = "simple"
    return {"name": parameter["name"], "in": place, "required": parameter.get("required", False), "schema": schema,
            "style": style, "explode": form == "multi"}


def parameters(description, operation):
    merged = []
    for raw, base in [(p, operation.path_base) for p in operation.path_item.get("parameters", [])] + [
        (p, operation.base) for p in operation.node.get("parameters", [])
    ]:
        parameter, parameter_base = description.resolve(raw, base)
        merged = [(p, b) for p, b in merged if not (p["name"] == parameter["name"] and p["in"] == parameter["in"])]
        merged.append((parameter, parameter_base))
    if "swagger" in description.root:
        return [(swagger_parameter(p), b) for p, b in merged if p["in"] not in ("body", "formData")]
    return merged


def server_base(description, operation):
    root = description.root
    if "swagger" in root:
        if "host" not in root:
            return RELATIVE_BASE
        base_path = root.get("basePath", "/")
        return f"{(root.get('schemes') or ['https'])[0]}://{root['host']}{'' if base_path == '/' else base_path}"
    for servers, base in [
        (operation.node.get("servers"), operation.base),
        (operation.path_item.get("servers"), operation.path_base),
        (description.root.get("servers"), description.root_path),
    ]:
        if servers:
            server, _ = description.resolve(servers[0], base)
            url = server.get("url", "/")
            for name, variable in (server.get("variables") or {}).items():
                url = url.replace("{" + name + "}", str(variable.get("default", "")))
            parsed = urllib.parse.urlsplit(url)
            if parsed.scheme and re.fullmatch(r"[A-Za-z0-9.\-]+(:[0-9]+)?", parsed.netloc or ""):
                return url
            if servers is not description.root.get("servers"):
                # An operation's server that is no URL without the app's help (`https://{agent_url}`): the
                # generated code sends it to the realm's base URL, the description's own server.
                continue
            return RELATIVE_BASE
    return RELATIVE_BASE


def expected_body_type(description, operation):
    root = description.root
    if "swagger" in root:
        consumes = operation.node.get("consumes", root.get("consumes", []))
        raw = [description.resolve(p, operation.base)[0] for p in operation.path_item.get("parameters", []) + operation.node.get("parameters", [])]
        if any(p.get("in") == "body" for p in raw):
            types = consumes or ["application/json"]
            return next((media for media in types if is_json(media)), types[0])
        form = [p for p in raw if p.get("in") == "formData"]
        if form:
            multipart = any(media.startswith("multipart/") for media in consumes) or any(p.get("type") == "file" for p in form)
            return "multipart/form-data" if multipart else "application/x-www-form-urlencoded"
        return None
    body = operation.node.get("requestBody")
    if body is None:
        return None
    body, _ = description.resolve(body, operation.base)
    content = body.get("content") or {}
    if not content:
        return None
    types = list(content)
    for media in types:
        if is_json(media):
            return media
    for media in types:
        if media.lower().startswith("application/x-www-form-urlencoded"):
            return "application/x-www-form-urlencoded"
    for media in types:
        if media.lower().startswith("multipart/"):
            return "multipart/form-data"
    for media in types:
        if media.lower().startswith("text/"):
            return "text/plain" if "*" in media else media
    return "application/octet-stream" if "*" in types[0] else types[0]


class Check:
    def __init__(self, name, description, samples):
        self.name, self.description, self.samples = name, description, samples
        self.failures = []

    def fail(self, operation, message):
        self.failures.append(f"{self.name}: {operation}: {message}")

    def check(self, operation, request):
        description, samples = self.description, self.samples
        if "error" in request:
            self.fail(operation.name, f"the request was not built: {request['error']}")
            return
        if request["method"] != operation.method.upper():
            self.fail(operation.name, f"method {request['method']}, expected {operation.method.upper()}")
        url = urllib.parse.urlsplit(request["url"])
        # A path that holds a query (`/responses?beta=true`) sends it as query parameters.
        path, _, fixed_query = operation.path.partition("?")
        path = "".join(
            part if part.startswith("{") else urllib.parse.quote(part, safe=PCHAR_SAFE + "/%")
            for part in re.split(r"(\{[^}]*\})", path))
        expected_query = urllib.parse.parse_qsl(fixed_query, keep_blank_values=True)
        expected_headers = {}
        cookies = []
        for parameter, base in parameters(description, operation):
            name, place = parameter["name"], parameter["in"]
            if place == "header" and name.lower() in ("accept", "content-type", "authorization"):
                continue
            style = parameter.get("style", "form" if place in ("query", "cookie") else "simple")
            explode = parameter.get("explode", style == "form")
            schema = parameter.get("schema")
            content_json = False
            if schema is None and parameter.get("content"):
                media, media_object = next(iter(parameter["content"].items()))
                schema = media_object.get("schema", {})
                content_json = is_json(media)
            schema = schema if schema is not None else {"type": "string"}
            kind = samples.kind(schema, base)
            if place == "path":
                text = self.path_text(kind, schema, base, name, style, explode)
                path = path.replace("{" + name + "}", urllib.parse.quote(text, safe=PCHAR_SAFE))
                continue
            value = samples.value(schema, base, name, "header" if place in ("header", "cookie") else "query")
            if place == "query":
                if content_json:
                    expected_query.append((name, ("json", value)))
                elif samples.is_scalar(kind) or kind[0] == "data":
                    expected_query.append((name, query_text(value)))
                elif kind[0] == "array" and samples.is_scalar(samples.kind(kind[1], kind[2])):
                    if explode or style == "deepObject":
                        key = name + "[]" if style == "deepObject" else name
                        expected_query += [(key, query_text(element)) for element in value]
                    else:
                        separator = {"spaceDelimited": " ", "pipeDelimited": "|"}.get(style, ",")
                        expected_query.append((name, separator.join(query_text(element) for element in value)))
                elif style == "form" and explode:
                    if isinstance(value, dict):
                        for member in sorted(value):
                            flatten(member, value[member], expected_query)
                    else:
                        flatten(name, value, expected_query)
                elif style == "deepObject":
                    # An array (of objects here) under `name[]`, as for scalars: `lines[][amount]=1`, which Rails,
                    # PHP and qs read back as an array of objects (OpenAPI leaves arrays under deepObject open).
                    flatten(name + "[]" if isinstance(value, list) else name, value, expected_query)
                else:
                    expected_query.append((name, styled(value, explode)))
            elif place == "header":
                expected_headers[name] = ("json", value) if content_json else styled(value, explode)
            elif place == "cookie":
                cookies.append(f"{name}={styled(value, explode)}")
        base_url = server_base(description, operation).rstrip("/")
        expected_url = base_url + "/" + path.lstrip("/")
        actual_url = urllib.parse.urlunsplit((url.scheme, url.netloc, url.path, "", ""))
        if actual_url != expected_url:
            self.fail(operation.name, f"URL {actual_url}, expected {expected_url}")
        actual_query = urllib.parse.parse_qsl(url.query, keep_blank_values=True)
        if not self.same_query(actual_query, expected_query):
            self.fail(operation.name, f"query {sorted(actual_query)}, expected {sorted(map(str, expected_query))}")
        headers = {key.lower(): value for key, value in (request.get("headers") or {}).items()}
        for name, value in expected_headers.items():
            actual = headers.get(name.lower())
            if isinstance(value, tuple):
                if actual is None or json.loads(actual) != value[1]:
                    self.fail(operation.name, f"header {name}: {actual!r}, expected the JSON of {value[1]!r}")
            elif actual != value:
                self.fail(operation.name, f"header {name}: {actual!r}, expected {value!r}")
        if cookies:
            actual = sorted((headers.get("cookie") or "").split("; "))
            if actual != sorted(cookies):
                self.fail(operation.name, f"Cookie {actual}, expected {sorted(cookies)}")
        body_type = expected_body_type(description, operation)
        actual_type = headers.get("content-type")
        if body_type is None:
            if actual_type is not None:
                self.fail(operation.name, f"a body ({actual_type}) where the description has none")
        elif actual_type is None or actual_type.split(";")[0].strip().lower() != body_type.split(";")[0].strip().lower():
            self.fail(operation.name, f"body content type {actual_type!r}, expected {body_type!r}")

    def path_text(self, kind, schema, base, name, style, explode):
        samples = self.samples
        prefix = "." if style == "label" else f";{name}=" if style == "matrix" else ""
        if samples.is_scalar(kind):
            return prefix + samples.text(kind, name, "path")
        if kind[0] == "array" and samples.is_scalar(samples.kind(kind[1], kind[2])):
            element = samples.kind(kind[1], kind[2])
            texts = [samples.text(element, name, "path"), samples.text(element, name, "path", second=True)]
            separator = "." if explode and style == "label" else f";{name}=" if explode and style == "matrix" else ","
            return prefix + separator.join(texts)
        return styled(samples.value(schema, base, name, "path"), explode)

    @staticmethod
    def same_query(actual, expected):
        plain = sorted(pair for pair in expected if not isinstance(pair[1], tuple))
        json_pairs = [pair for pair in expected if isinstance(pair[1], tuple)]
        remaining = list(actual)
        for key, (_, value) in json_pairs:
            match = next((pair for pair in remaining if pair[0] == key and json.loads(pair[1]) == value), None)
            if match is None:
                return False
            remaining.remove(match)
        return sorted(remaining) == plain


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", required=True)
    parser.add_argument("--document", nargs=3, action="append", metavar=("NAME", "DESCRIPTION", "REPORT"), required=True)
    arguments = parser.parse_args()
    requests = {}
    with open(arguments.requests, encoding="utf-8") as stream:
        for line in stream:
            request = json.loads(line)
            requests.setdefault(request["document"], {}).setdefault(request["operation"], []).append(request)
    failed = False
    for name, path, report_path in arguments.document:
        description = Description(path)
        with open(report_path, encoding="utf-8") as stream:
            report = json.load(stream)
        check = Check(name, description, Samples(description))
        all_operations = operations(description)
        skipped = {skip["name"]: skip["reason"] for skip in report["skipped"] if skip["kind"] == "operation"}
        generated = set(report["generated"])
        built = requests.get(name, {})
        for operation in all_operations:
            if operation.name in skipped:
                continue
            if operation.name not in generated:
                check.fail(operation.name, "neither generated nor listed as skipped")
                continue
            if operation.name not in built:
                check.fail(operation.name, "generated, but no request was built from its sample")
                continue
            for request in built[operation.name]:
                check.check(operation, request)
        extra = generated - {operation.name for operation in all_operations}
        for operation in sorted(extra):
            check.fail(operation, "generated, but the description has no such operation")
        print(
            f"{name}: {len(all_operations)} operations in the description, {len(generated)} generated, "
            f"{len(skipped)} skipped, {sum(len(value) for value in built.values())} requests checked, "
            f"{len(check.failures)} failures")
        for reason in sorted(set(skipped.values())):
            print(f"  skipped ({sum(1 for value in skipped.values() if value == reason)}): {reason}")
        for failure in check.failures[:40]:
            print("  FAIL " + failure)
        if len(check.failures) > 40:
            print(f"  … and {len(check.failures) - 40} more")
        failed = failed or bool(check.failures) or len(all_operations) != len(generated) + len(skipped)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
