"""Routes read from the ``google.api.http`` rules of service descriptors.

Nothing here is written per route: every method of every given service with an HTTP
rule (and each of its ``additional_bindings``) becomes one :class:`Route`. All the work
that does not depend on the request (template compilation, message classes, where each
path variable goes) is done here, once, at start-up.

Path variables that name no field of the request message (``{agent_name}``: no request
carries the agent, the route names it) are *metadata variables*: the binder sends them
as gRPC request metadata under the variable name with ``_`` replaced by ``-``
(``agent-name``), and the pattern treats them as greedy so that names with ``/`` work.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from google.api import annotations_pb2, http_pb2
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor, MethodDescriptor, ServiceDescriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass

from gateway.host.pattern import CompiledPattern, parse_template

_HTTP_VERBS = ("get", "put", "post", "delete", "patch")


class RouteConfigError(ValueError):
    """An HTTP rule cannot be served (bad template, bad body field, conflicting binding)."""


@dataclass(frozen=True, slots=True)
class PathBinding:
    """Where one path variable goes: a field path of the request, or a metadata key."""

    variable: str
    field_path: tuple[FieldDescriptor, ...] = ()
    metadata_key: str = ""


@dataclass(slots=True)
class Route:
    """One HTTP binding of one gRPC method."""

    http_method: str
    template: str
    pattern: CompiledPattern
    method: MethodDescriptor
    grpc_path: str
    request_class: type[Message]
    response_class: type[Message]
    body: str
    response_body: str
    path_bindings: tuple[PathBinding, ...]
    server_streaming: bool
    #: Dotted proto-name paths bound by the path or the body: the query may not set them.
    bound_fields: frozenset[str] = field(default_factory=frozenset)

    @property
    def operation_id(self) -> str:
        return f"{self.method.containing_service.name}_{self.method.name}"


def metadata_key_for(variable: str) -> str:
    """The metadata key a field-less path variable becomes: ``agent_name`` → ``agent-name``."""
    return variable.replace("_", "-").lower()


def http_rule_of(method: MethodDescriptor) -> http_pb2.HttpRule | None:
    """The ``google.api.http`` option of a method, or None."""
    options = method.GetOptions()
    if options.HasExtension(annotations_pb2.http):
        rule: http_pb2.HttpRule = options.Extensions[annotations_pb2.http]
        return rule
    # Descriptors from a dynamic pool may carry the option as unknown bytes.
    reparsed = descriptor_pb2.MethodOptions.FromString(options.SerializeToString())
    if reparsed.HasExtension(annotations_pb2.http):
        rule = reparsed.Extensions[annotations_pb2.http]
        return rule
    return None


def routes_from_services(services: Iterable[ServiceDescriptor]) -> list[Route]:
    """Every HTTP binding of every method of ``services``; raises RouteConfigError."""
    routes: list[Route] = []
    for service in services:
        for method in service.methods:
            rule = http_rule_of(method)
            if rule is None:
                continue
            if method.client_streaming:
                raise RouteConfigError(
                    f"{method.full_name}: client-streaming methods cannot be transcoded"
                )
            routes.append(_route(method, rule))
            for extra in rule.additional_bindings:
                if extra.additional_bindings:
                    raise RouteConfigError(
                        f"{method.full_name}: additional_bindings may not nest"
                    )
                routes.append(_route(method, extra))
    check_conflicts(routes)
    return routes


def check_conflicts(routes: Iterable[Route]) -> None:
    """Two bindings with the same HTTP method and the same path shape are an error."""
    seen: dict[tuple[object, ...], Route] = {}
    for route in routes:
        key = (route.http_method, route.pattern.shape)
        other = seen.get(key)
        if other is not None:
            raise RouteConfigError(
                f"conflicting HTTP bindings: {route.http_method} {route.template} "
                f"({route.method.full_name}) and {other.template} ({other.method.full_name})"
            )
        seen[key] = route


def _route(method: MethodDescriptor, rule: http_pb2.HttpRule) -> Route:
    kind = rule.WhichOneof("pattern")
    if kind in _HTTP_VERBS:
        http_method, template_text = kind.upper(), getattr(rule, kind)
    elif kind == "custom":
        http_method, template_text = rule.custom.kind.upper(), rule.custom.path
    else:
        raise RouteConfigError(f"{method.full_name}: HTTP rule has no pattern")
    where = f"{method.full_name} {http_method} {template_text}"
    try:
        template = parse_template(template_text)
    except ValueError as error:
        raise RouteConfigError(f"{where}: {error}") from error
    request_desc = method.input_type
    bindings: list[PathBinding] = []
    greedy: set[str] = set()
    bound: set[str] = set()
    for name in template.variable_names:
        path = resolve_field_path(request_desc, name.split("."))
        if path is None:
            if "." in name:
                raise RouteConfigError(f"{where}: no field {name!r} in {request_desc.full_name}")
            bindings.append(PathBinding(name, metadata_key=metadata_key_for(name)))
            greedy.add(name)
            continue
        leaf = path[-1]
        if leaf.is_repeated or leaf.type == FieldDescriptor.TYPE_MESSAGE:
            raise RouteConfigError(f"{where}: path variable {name!r} must be a scalar field")
        bindings.append(PathBinding(name, field_path=tuple(path)))
        bound.add(".".join(fd.name for fd in path))
    body = rule.body
    if body and body != "*":
        body_field = request_desc.fields_by_name.get(body)
        if body_field is None:
            raise RouteConfigError(f"{where}: body field {body!r} not in {request_desc.full_name}")
        bound.add(body)
    response_body = rule.response_body
    if response_body and response_body not in method.output_type.fields_by_name:
        raise RouteConfigError(f"{where}: no response_body field {response_body!r}")
    try:
        pattern = CompiledPattern(template, frozenset(greedy))
    except ValueError as error:
        raise RouteConfigError(f"{where}: {error}") from error
    return Route(
        http_method=http_method,
        template=template_text,
        pattern=pattern,
        method=method,
        grpc_path=f"/{method.containing_service.full_name}/{method.name}",
        request_class=_message_class(request_desc),
        response_class=_message_class(method.output_type),
        body=body,
        response_body=response_body,
        path_bindings=tuple(bindings),
        server_streaming=method.server_streaming,
        bound_fields=frozenset(bound),
    )


def resolve_field_path(message: Descriptor, names: list[str]) -> list[FieldDescriptor] | None:
    """Follow a dotted path (proto or JSON names) through nested messages, or None."""
    path: list[FieldDescriptor] = []
    current: Descriptor | None = message
    for name in names:
        if current is None:
            return None
        found = find_field(current, name)
        if found is None:
            return None
        path.append(found)
        current = found.message_type if found.type == FieldDescriptor.TYPE_MESSAGE else None
    return path


def find_field(message: Descriptor, name: str) -> FieldDescriptor | None:
    """A field by its proto name, its json_name or its lowerCamel name."""
    found = message.fields_by_name.get(name)
    if found is not None:
        return found
    for candidate in message.fields:
        if candidate.json_name == name or _camel(candidate.name) == name:
            return candidate
    return None


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _message_class(descriptor: Descriptor) -> type[Message]:
    cls: Any = GetMessageClass(descriptor)
    return cls  # type: ignore[no-any-return]
