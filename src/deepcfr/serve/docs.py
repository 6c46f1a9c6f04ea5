"""``/api/docs``: the JSON API as one plain HTML page drawn from the app's OpenAPI schema.

Swagger UI loads its scripts from a CDN, which many labs (and the machines here) cannot reach,
and the page's Content-Security-Policy allows no scripts from elsewhere; this page needs none.
The schema itself is at ``/api/openapi.json``.
"""

from __future__ import annotations

from html import escape

METHODS = ("get", "post", "put", "delete", "patch")


def _type(schema: dict, components: dict) -> str:
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if "anyOf" in schema:
        return " | ".join(_type(s, components) for s in schema["anyOf"])
    if schema.get("type") == "array":
        return f"list of {_type(schema.get('items', {}), components)}"
    return str(schema.get("type", "any"))


def _limits(schema: dict) -> str:
    parts = [
        f"{k} {schema[k]}"
        for k in ("minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems")
        if k in schema
    ]
    if "default" in schema:
        parts.append(f"default {schema['default']!r}")
    return ", ".join(parts)


def _body_rows(name: str, components: dict) -> str:
    schema = components.get(name, {})
    rows = []
    required = set(schema.get("required", ()))
    for field, prop in schema.get("properties", {}).items():
        rows.append(
            f"<tr><td><code>{escape(field)}</code>{' (required)' if field in required else ''}</td>"
            f"<td>{escape(_type(prop, components))}</td><td>{escape(_limits(prop))}</td></tr>"
        )
    return "".join(rows)


def docs_page(openapi: dict) -> str:
    components = openapi.get("components", {}).get("schemas", {})
    sections = []
    for path, item in openapi.get("paths", {}).items():
        for method in METHODS:
            op = item.get(method)
            if op is None:
                continue
            rows = ""
            for p in op.get("parameters", []):
                schema = p.get("schema", {})
                rows += (
                    f"<tr><td><code>{escape(p['name'])}</code> ({escape(p.get('in', ''))}"
                    f"{', required' if p.get('required') else ''})</td><td>{escape(_type(schema, components))}</td>"
                    f"<td>{escape(_limits(schema))}</td></tr>"
                )
            body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
            if body and "$ref" in body:
                rows += _body_rows(body["$ref"].rsplit("/", 1)[-1], components)
            table = (
                f"<table><tr><th>input</th><th>type</th><th>limits</th></tr>{rows}</table>"
                if rows
                else "<p>no input</p>"
            )
            doc = op.get("description") or op.get("summary") or ""
            sections.append(
                f"<section><h2><span class='m'>{method.upper()}</span> <code>{escape(path)}</code></h2>"
                f"<p>{escape(doc)}</p>{table}</section>"
            )
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>deepcfr serve: the JSON API</title>
<style>body{{font-family:"DejaVu Sans",Arial,sans-serif;max-width:980px;margin:1em auto;padding:0 1em;color:#222}}
h2{{font-size:17px;margin:1.4em 0 .3em}} .m{{background:#1f5c3f;color:#fff;padding:1px 6px;border-radius:4px}}
table{{border-collapse:collapse;font-size:14px}} td,th{{border:1px solid #bbb;padding:2px 8px;text-align:left}}</style>
</head><body><h1>deepcfr serve: the JSON API</h1>
<p>Every refused request is answered with a 4xx status and <code>{{"error": message}}</code>; an unexpected
failure with a 500 and the same shape. The machine-readable schema is
<a href="/api/openapi.json">/api/openapi.json</a>.</p>
{"".join(sections)}</body></html>"""
