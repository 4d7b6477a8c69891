"""Names others define that we honour as they do: neuro-san's and neuro-san-studio's, the
LLM providers' credentials (secrets: masked by ``neuro-san config``) and standard ones."""

from __future__ import annotations

from neuro_san.settings.catalog_server import ALL
from neuro_san.settings.registry import Kind, Origin, Setting, declare

STUDIO = Origin.STUDIO
PROVIDER = Origin.PROVIDER


def _studio(name: str, kind: Kind, default: object, doc: str) -> Setting:
    return Setting(name, kind, default, doc, origin=STUDIO)


def _credential(name: str, doc: str) -> Setting:
    return Setting(name, Kind.TEXT, None, doc, secret=True, origin=PROVIDER)


def _provider(name: str, doc: str) -> Setting:
    return Setting(name, Kind.TEXT, None, doc, origin=PROVIDER)


declare(
    Setting("MCP_SERVERS_INFO_FILE", Kind.TEXT, None, "neuro-san's MCP servers info file (headers, tools per server)",
            origin=Origin.NEURO_SAN),
    _studio("AGENT_NETWORK_DESIGNER_PROGRESS_STYLE", Kind.TEXT, "internal",
            "the designer's progress reports (only studio's internal style)"),
    _studio("AGENT_NETWORK_DESIGNER_USE_RESERVATIONS", Kind.SWITCH, False,
            "the designer deploys what it designs as temporary networks"),
    _studio("AGENT_NETWORK_DESIGNER_RESERVATIONS_LIFETIME_IN_SECONDS", Kind.FLOAT, 3600.0,
            "how long a designed temporary network lives"),
    _studio("AGENT_NETWORK_DESIGNER_MAX_VALIDATION_ATTEMPTS", Kind.INT, 3,
            "how often the designer retries a network that does not validate"),
    _studio("AGENT_NETWORK_DESIGNER_SUBDIRECTORY", Kind.TEXT, "generated", "where the designer writes networks"),
    _studio("AGENT_NETWORK_DESIGNER_DEMO_MODE", Kind.SWITCH, True, "the designer writes nothing to disk"),
    _studio("AGENT_NETWORK_DESIGNER_TOOLBOX_INFO_FILE", Kind.TEXT, None,
            "the toolbox file whose tools the designer offers (read by studio's get_toolbox coded tool)"),
    Setting("MEM0_API_KEY", Kind.TEXT, None, "Mem0 Platform API key (studio's mem0 memory)", secret=True,
            origin=STUDIO),
    Setting("MEM0_HOST", Kind.TEXT, None, "Mem0 Platform host", shown_default="Mem0's", origin=STUDIO),
    Setting("MEM0_DEFAULT_USER_ID", Kind.TEXT, None, "the mem0 user when a chat names none", origin=STUDIO,
            shown_default="studio's"),
    _credential("OPENAI_API_KEY", "OpenAI's API key"),
    _provider("OPENAI_API_BASE", "an OpenAI-compatible server's base URL"),
    _provider("OPENAI_ORG_ID", "sent as OpenAI-Organization"),
    _provider("OPENAI_API_VERSION", "Azure OpenAI's API version"),
    _credential("AZURE_OPENAI_API_KEY", "Azure OpenAI's API key"),
    _credential("AZURE_OPENAI_AD_TOKEN", "Azure OpenAI's Entra ID bearer token"),
    _provider("AZURE_OPENAI_ENDPOINT", "Azure OpenAI's endpoint"),
    _provider("AZURE_OPENAI_DEPLOYMENT_NAME", "Azure OpenAI's deployment"),
    _credential("ANTHROPIC_API_KEY", "Anthropic's API key"),
    _provider("ANTHROPIC_BASE_URL", "Anthropic's base URL"),
    _credential("GOOGLE_API_KEY", "Google Gemini's API key"),
    _credential("AWS_ACCESS_KEY_ID", "Bedrock: AWS access key"),
    _credential("AWS_SECRET_ACCESS_KEY", "Bedrock: AWS secret key"),
    _credential("AWS_SESSION_TOKEN", "Bedrock: AWS session token"),
    _provider("AWS_PROFILE", "Bedrock: AWS profile"),
    _provider("AWS_REGION", "Bedrock: AWS region"),
    _provider("AWS_DEFAULT_REGION", "Bedrock: AWS region when AWS_REGION is unset"),
    _credential("OPENROUTER_API_KEY", "OpenRouter's API key"),
    _provider("OPENROUTER_API_BASE", "OpenRouter's base URL"),
    _credential("NVIDIA_API_KEY", "NVIDIA's API key"),
    _provider("NVIDIA_BASE_URL", "NVIDIA's base URL"),
    _credential("GROQ_API_KEY", "Groq's API key"),
    _provider("GROQ_BASE_URL", "Groq's base URL"),
    _credential("MISTRAL_API_KEY", "Mistral's API key"),
    _provider("MISTRAL_BASE_URL", "Mistral's base URL"),
    _credential("DEEPSEEK_API_KEY", "DeepSeek's API key"),
    _provider("DEEPSEEK_BASE_URL", "DeepSeek's base URL"),
    _credential("VLLM_API_KEY", "vLLM's API key"),
    _provider("VLLM_BASE_URL", "vLLM's base URL"),
    _provider("LMSTUDIO_BASE_URL", "LM Studio's base URL"),
    Setting("OTEL_SERVICE_NAME", Kind.TEXT, "neuro-san", "the service name on spans", origin=Origin.STANDARD),
    Setting("OTEL_TRACES_EXPORTER", Kind.TEXT, None, "the span exporter when AGENT_TRACING_EXPORT is unset",
            origin=Origin.STANDARD),
    Setting("OTEL_INSTRUMENTATION_A2A_SDK_ENABLED", Kind.TEXT, None,
            "false: the a2a-sdk opens no spans; unset, neuro-san serve sets it to follow AGENT_TRACING",
            origin=Origin.STANDARD, shown_default="AGENT_TRACING's"),
    Setting("XDG_CACHE_HOME", Kind.TEXT, None, "the cache root of AGENT_HOCON_CACHE_DIR's default",
            origin=Origin.STANDARD, shown_default="~/.cache"),
    Setting("NO_COLOR", Kind.TEXT, None, "any value: the client commands print without colour",
            origin=Origin.STANDARD, applies=ALL),
    Setting("TERM", Kind.TEXT, None, "dumb: the client commands print without colour", origin=Origin.STANDARD,
            applies=ALL),
)
