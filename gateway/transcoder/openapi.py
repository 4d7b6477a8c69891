"""The OpenAPI 3 document of the HTTP API, built from the same routes and descriptors.

Paths, operations and component schemas come from the routes (one operation per HTTP
binding) and the message descriptors, with snake_case (proto) property names as on the
wire. ``Status`` and ``GoogleProtobufAny`` describe the error body. A server-streaming
method's 200 is documented as ``application/json-lines`` (one JSON object per line) and
``text/event-stream``. Built once at start-up; served as JSON (or YAML on request).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from gateway.transcoder.routes import Route

_TITLE = "NeuroSan Agent Service API"
_VAR = re.compile(r"\{([^}=]+)(=[^}]*)?\}")
_SCALARS: dict[int, dict[str, str]] = {
    FieldDescriptor.TYPE_STRING: {"type": "string"},
    FieldDescriptor.TYPE_BYTES: {"type": "string", "format": "byte"},
    FieldDescriptor.TYPE_BOOL: {"type": "boolean"},
    FieldDescriptor.TYPE_DOUBLE: {"type": "number", "format": "double"},
    FieldDescriptor.TYPE_FLOAT: {"type": "number", "format": "float"},
    FieldDescriptor.TYPE_INT32: {"type": "integer", "format": "int32"},
    FieldDescriptor.TYPE_SINT32: {"type": "integer", "format": "int32"},
    FieldDescriptor.TYPE_SFIXED32: {"type": "integer", "format": "int32"},
    FieldDescriptor.TYPE_UINT32: {"type": "integer", "format": "uint32"},
    FieldDescriptor.TYPE_FIXED32: {"type": "integer", "format": "uint32"},
    FieldDescriptor.TYPE_INT64: {"type": "string", "format": "int64"},
    FieldDescriptor.TYPE_SINT64: {"type": "string", "format": "int64"},
    FieldDescriptor.TYPE_SFIXED64: {"type": "string", "format": "int64"},
    FieldDescriptor.TYPE_UINT64: {"type": "string", "format": "uint64"},
    FieldDescriptor.TYPE_FIXED64: {"type": "string", "format": "uint64"},
}
_WELL_KNOWN: dict[str, dict[str, Any]] = {
    "google.protobuf.Struct": {"type": "object"},
    "google.protobuf.Value": {},
    "google.protobuf.ListValue": {"type": "array", "items": {}},
}
_STATUS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "code": {
            "type": "integer",
            "format": "int32",
            "description": "The status code, a google.rpc.Code (gRPC) number.",
        },
        "message": {"type": "string", "description": "A developer-facing error message."},
        "details": {
            "type": "array",
            "items": {"$ref": "#/components/schemas/GoogleProtobufAny"},
            "description": "Messages that carry the error details (e.g. google.rpc.BadRequest).",
        },
    },
    "description": "The error body (google.rpc.Status). A stream that fails after its first "
    'line ends with the line {"error": <Status>}.',
}
_ANY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "@type": {"type": "string", "description": "The type of the serialized message."}
    },
    "additionalProperties": True,
    "description": "Contains an arbitrary serialized message along with a @type that "
    "describes the type of the serialized message.",
}


class _Schemas:
    def __init__(self) -> None:
        self.schemas: dict[str, dict[str, Any]] = {}
        self._names: dict[str, str] = {}  # full name → component name

    def ref(self, descriptor: Descriptor) -> dict[str, Any]:
        return {"$ref": f"#/components/schemas/{self.add(descriptor)}"}

    def add(self, descriptor: Descriptor) -> str:
        name = self._names.get(descriptor.full_name)
        if name is not None:
            return name
        name = descriptor.name
        if name in self.schemas or name in ("Status", "GoogleProtobufAny"):
            name = descriptor.full_name.replace(".", "_")
        self._names[descriptor.full_name] = name
        schema: dict[str, Any] = {"type": "object", "properties": {}}
        self.schemas[name] = schema  # registered first: messages can recurse
        for fd in descriptor.fields:
            schema["properties"][fd.name] = self.field(fd)
        return name

    def field(self, fd: FieldDescriptor) -> dict[str, Any]:
        if fd.type == FieldDescriptor.TYPE_MESSAGE and fd.message_type.GetOptions().map_entry:
            value = self.single(fd.message_type.fields_by_name["value"])
            return {"type": "object", "additionalProperties": value}
        single = self.single(fd)
        if fd.is_repeated:
            return {"type": "array", "items": single}
        return single

    def single(self, fd: FieldDescriptor) -> dict[str, Any]:
        if fd.type == FieldDescriptor.TYPE_MESSAGE:
            known = _WELL_KNOWN.get(fd.message_type.full_name)
            if known is not None:
                return dict(known)
            return self.ref(fd.message_type)
        if fd.type == FieldDescriptor.TYPE_ENUM:
            names = [value.name for value in fd.enum_type.values]
            return {"enum": names, "type": "string", "format": "enum"}
        return dict(_SCALARS.get(fd.type, {"type": "string"}))


def openapi_path(template: str) -> str:
    """``/v1/{name=messages/*}:get`` → ``/v1/{name}:get``."""
    return _VAR.sub(lambda match: "{" + match.group(1) + "}", template)


def build_document(routes: Iterable[Route], version: str = "0.1.0") -> dict[str, Any]:
    """The OpenAPI 3 document of ``routes``."""
    schemas = _Schemas()
    paths: dict[str, dict[str, Any]] = {}
    tags: dict[str, dict[str, str]] = {}
    for route in routes:
        service = route.method.containing_service.name
        tags.setdefault(service, {"name": service})
        operation = _operation(route, schemas)
        paths.setdefault(openapi_path(route.template), {})[route.http_method.lower()] = operation
    components = dict(sorted(schemas.schemas.items()))
    components["Status"] = _STATUS_SCHEMA
    components["GoogleProtobufAny"] = _ANY_SCHEMA
    return {
        "openapi": "3.1.0",
        "info": {
            "title": _TITLE,
            "version": version,
            "description": "HTTP/JSON API transcoded from the gRPC services' google.api.http "
            "rules. JSON uses snake_case names and enum names; errors are Status bodies; "
            "streams are one JSON object per line (application/json-lines), or SSE with "
            "Accept: text/event-stream. Agent names may contain '/'.",
        },
        "tags": list(tags.values()),
        "paths": dict(sorted(paths.items())),
        "components": {"schemas": components},
    }


def _operation(route: Route, schemas: _Schemas) -> dict[str, Any]:
    method = route.method
    operation: dict[str, Any] = {
        "tags": [method.containing_service.name],
        "summary": method.name,
        "operationId": route.operation_id,
        "parameters": [
            {"name": binding.variable, "in": "path", "required": True, "schema": {"type": "string"}}
            for binding in route.path_bindings
        ],
    }
    if route.body:
        if route.body == "*":
            body_schema = schemas.ref(method.input_type)
        else:
            body_schema = schemas.field(method.input_type.fields_by_name[route.body])
        operation["requestBody"] = {
            "content": {"application/json": {"schema": body_schema}},
            "required": True,
        }
    response_schema = (
        schemas.field(method.output_type.fields_by_name[route.response_body])
        if route.response_body
        else schemas.ref(method.output_type)
    )
    if route.server_streaming:
        ok = {
            "description": "OK: a stream of messages, one JSON object per line; a failure "
            'after the first line ends the stream with {"error": <Status>}.',
            "content": {
                "application/json-lines": {"schema": response_schema},
                "text/event-stream": {"schema": {"type": "string"}},
            },
        }
    else:
        ok = {"description": "OK", "content": {"application/json": {"schema": response_schema}}}
    operation["responses"] = {
        "200": ok,
        "default": {
            "description": "Default error response",
            "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/Status"}}
            },
        },
    }
    return operation
