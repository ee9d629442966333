"""The providers' own SDK types, both ways round, for toolwire's harness shapes.

    python provider_fixtures.py generate DIR   # write the fixtures into DIR
    python provider_fixtures.py validate FILE  # check toolwire's output in FILE

`generate` builds assistant outputs (whole responses, and the events of streamed ones) with
the pydantic types of the official `openai`, `anthropic` and `google-genai` packages, as the
pinned versions in tests/peers/locks/providers-requirements.txt declare them, and writes one
JSON file per case into DIR (tests/fixtures/providers/ in the repository). Each file holds
the SDK's type name, the wire form (`model_dump(mode="json", by_alias=True,
exclude_unset=True)`: what the API sends) and, for whole responses, the SDK's full dump (every
declared field, `None` ones included, as `model_dump(mode="json", by_alias=True)` gives it;
for Gemini also `model_dump(mode="json", exclude_none=True)`, with the SDK's snake_case names). A stream is a list of the `data:` texts of its events, in order.
`tool_names.json` holds name cases and, per API, whether its tool definitions take each name
(`NAME_RULES`, read against the pinned SDKs' own field docs where they state the rule).

`validate` reads what toolwire answered and described (written by tests/harness/providers.rs)
and checks every piece against the SDKs' INPUT types: the tool-result message, the
function_call_output / custom_tool_call_output item, the tool_result block, the
functionResponse part, and each API's tool definitions (for the exports of the name cases
also that every name offered fits the API's rule and every name left out does not); and the calls toolwire put together
from the streams against the SDKs' own output types. A TypedDict is checked for its exact
keys too (pydantic ignores unknown keys of a TypedDict), recursively. Exit status 0 when all
hold; otherwise every failure is printed and the status is 1.
"""

import inspect
import json
import re
import sys
import typing
from pathlib import Path

import anthropic
import anthropic.types as at
import google.genai
import openai
import openai.types.chat as oc
import openai.types.responses as orr
import pydantic
import typing_extensions as te
from google.genai import types as gt
from openai.types.responses import response_input_param as rip

VERSIONS = {
    "openai": openai.__version__,
    "anthropic": anthropic.__version__,
    "google-genai": google.genai.__version__,
}

WEATHER_ARGS = {"city": "Paris", "unit": "celsius"}
TIME_ARGS = {"zone": "Europe/Paris"}


def wire(model):
    return model.model_dump(mode="json", by_alias=True, exclude_unset=True)


def full(model):
    return model.model_dump(mode="json", by_alias=True)


def whole(sdk, model, **extra):
    value = {
        "sdk": f"{sdk} {VERSIONS[sdk]}",
        "type": type(model).__name__,
        "wire": wire(model),
        "dumped": full(model),
    }
    value.update(extra)
    return value


def stream(sdk, kind, events, trailer=()):
    texts = [json.dumps(wire(event), separators=(",", ":")) for event in events]
    return {
        "sdk": f"{sdk} {VERSIONS[sdk]}",
        "type": kind,
        "events": texts + list(trailer),
    }


# ---- OpenAI Chat Completions --------------------------------------------------------


def chat_completion(tool_calls, finish="tool_calls"):
    return oc.ChatCompletion.model_validate(
        {
            "id": "chatcmpl-fixture",
            "object": "chat.completion",
            "created": 1764633600,
            "model": "gpt-5.1",
            "system_fingerprint": "fp_fixture",
            "service_tier": "default",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": finish,
                    "logprobs": None,
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "refusal": None,
                        "annotations": [],
                        "tool_calls": tool_calls,
                    },
                }
            ],
            "usage": {"prompt_tokens": 82, "completion_tokens": 41, "total_tokens": 123},
        }
    )


def function_call(call_id, name, args):
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


def chat_stream():
    def chunk(delta, finish=None, usage=None, choices=True):
        return oc.ChatCompletionChunk.model_validate(
            {
                "id": "chatcmpl-fixture",
                "object": "chat.completion.chunk",
                "created": 1764633600,
                "model": "gpt-5.1",
                "system_fingerprint": "fp_fixture",
                "choices": (
                    [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]
                    if choices
                    else []
                ),
                "usage": usage,
            }
        )

    weather = json.dumps(WEATHER_ARGS)
    time = json.dumps(TIME_ARGS)
    events = [
        chunk({"role": "assistant", "content": None, "refusal": None}),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_w",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": ""},
                    }
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": weather[:9]}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": weather[9:]}}]}),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 1,
                        "id": "call_t",
                        "type": "function",
                        "function": {"name": "get-time", "arguments": ""},
                    }
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 1, "function": {"arguments": time[:5]}}]}),
        chunk({"tool_calls": [{"index": 1, "function": {"arguments": time[5:]}}]}),
        chunk({}, finish="tool_calls"),
        chunk(
            None,
            choices=False,
            usage={"prompt_tokens": 82, "completion_tokens": 41, "total_tokens": 123},
        ),
    ]
    # The Chat Completions stream ends with the sentinel `data: [DONE]`, not a chunk.
    return stream("openai", "ChatCompletionChunk", events, trailer=["[DONE]"])


# ---- OpenAI Responses ---------------------------------------------------------------

REASONING = {
    "type": "reasoning",
    "id": "rs_fixture",
    "summary": [{"type": "summary_text", "text": "Weather and time for Paris."}],
    "encrypted_content": None,
}
MESSAGE = {
    "type": "message",
    "id": "msg_fixture",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "Let me check both.", "annotations": []}],
}


def responses_call(item_id, call_id, name, args, **extra):
    item = {
        "type": "function_call",
        "id": item_id,
        "call_id": call_id,
        "name": name,
        "arguments": json.dumps(args),
        "status": "completed",
    }
    item.update(extra)
    return item


CUSTOM_ITEM = {
    "type": "custom_tool_call",
    "id": "ctc_fixture",
    "call_id": "call_patch",
    "name": "apply-patch",
    "input": "*** Begin Patch\n*** End Patch\n",
}


def response(output, status="completed"):
    return orr.Response.model_validate(
        {
            "id": "resp_fixture",
            "object": "response",
            "created_at": 1764633600,
            "status": status,
            "model": "gpt-5.1",
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": {
                "input_tokens": 82,
                "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                "output_tokens": 41,
                "output_tokens_details": {"reasoning_tokens": 12},
                "total_tokens": 123,
            },
        }
    )


def responses_output():
    return [
        REASONING,
        MESSAGE,
        responses_call("fc_w", "call_w", "get_weather", WEATHER_ARGS),
        # `async` is declared by the SDK on a function_call item (optional).
        responses_call("fc_t", "call_t", "get-time", TIME_ARGS, **{"async": False}),
    ]


def responses_stream():
    seq = iter(range(1000))

    def event(kind, **fields):
        fields.update(type=kind, sequence_number=next(seq))
        return fields

    weather = json.dumps(WEATHER_ARGS)
    time = json.dumps(TIME_ARGS)
    pending = lambda item: dict(item, status="in_progress", arguments="")  # noqa: E731
    items = responses_output()
    raw = [
        event("response.created", response=wire(response([], status="in_progress"))),
        event("response.output_item.added", output_index=0, item=dict(REASONING)),
        event("response.output_item.done", output_index=0, item=REASONING),
        event("response.output_item.added", output_index=1, item=dict(MESSAGE, content=[])),
        event("response.output_item.done", output_index=1, item=MESSAGE),
        event("response.output_item.added", output_index=2, item=pending(items[2])),
        event(
            "response.function_call_arguments.delta",
            output_index=2,
            item_id="fc_w",
            delta=weather[:10],
        ),
        event(
            "response.function_call_arguments.delta",
            output_index=2,
            item_id="fc_w",
            delta=weather[10:],
        ),
        event(
            "response.function_call_arguments.done",
            output_index=2,
            item_id="fc_w",
            arguments=weather,
        ),
        event("response.output_item.done", output_index=2, item=items[2]),
        event("response.output_item.added", output_index=3, item=pending(items[3])),
        event(
            "response.function_call_arguments.delta",
            output_index=3,
            item_id="fc_t",
            delta=time,
        ),
        event(
            "response.function_call_arguments.done",
            output_index=3,
            item_id="fc_t",
            arguments=time,
        ),
        event("response.output_item.done", output_index=3, item=items[3]),
        event("response.output_item.added", output_index=4, item=dict(CUSTOM_ITEM, input="")),
        event(
            "response.custom_tool_call_input.delta",
            output_index=4,
            item_id="ctc_fixture",
            delta=CUSTOM_ITEM["input"],
        ),
        event(
            "response.custom_tool_call_input.done",
            output_index=4,
            item_id="ctc_fixture",
            input=CUSTOM_ITEM["input"],
        ),
        event("response.output_item.done", output_index=4, item=CUSTOM_ITEM),
        event("response.completed", response=wire(response(items + [CUSTOM_ITEM]))),
    ]
    adapter = pydantic.TypeAdapter(orr.ResponseStreamEvent)
    return stream("openai", "ResponseStreamEvent", [adapter.validate_python(e) for e in raw])


# ---- Anthropic ----------------------------------------------------------------------

THINKING = {"type": "thinking", "thinking": "Two lookups.", "signature": "c2lnbmF0dXJl"}


def anthropic_message(content, stop="tool_use"):
    return at.Message.model_validate(
        {
            "id": "msg_fixture",
            "type": "message",
            "role": "assistant",
            "model": "claude-opus-4-5",
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 82, "output_tokens": 41},
        }
    )


def anthropic_content():
    return [
        THINKING,
        {"type": "text", "text": "Let me check both."},
        {"type": "tool_use", "id": "toolu_w", "name": "get_weather", "input": WEATHER_ARGS},
        {"type": "tool_use", "id": "toolu_t", "name": "get-time", "input": TIME_ARGS},
    ]


def anthropic_stream():
    weather = json.dumps(WEATHER_ARGS)
    time = json.dumps(TIME_ARGS)
    started = anthropic_message([], stop=None)
    raw = [
        {"type": "message_start", "message": wire(started)},
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "thinking_delta", "thinking": "Two lookups."}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "signature_delta", "signature": "c2lnbmF0dXJl"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1,
         "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1,
         "delta": {"type": "text_delta", "text": "Let me check both."}},
        {"type": "content_block_stop", "index": 1},
        {"type": "content_block_start", "index": 2,
         "content_block": {"type": "tool_use", "id": "toolu_w", "name": "get_weather",
                           "input": {}}},
        {"type": "content_block_delta", "index": 2,
         "delta": {"type": "input_json_delta", "partial_json": ""}},
        {"type": "content_block_delta", "index": 2,
         "delta": {"type": "input_json_delta", "partial_json": weather[:7]}},
        {"type": "content_block_delta", "index": 2,
         "delta": {"type": "input_json_delta", "partial_json": weather[7:]}},
        {"type": "content_block_stop", "index": 2},
        {"type": "content_block_start", "index": 3,
         "content_block": {"type": "tool_use", "id": "toolu_t", "name": "get-time",
                           "input": {}}},
        {"type": "content_block_delta", "index": 3,
         "delta": {"type": "input_json_delta", "partial_json": time}},
        {"type": "content_block_stop", "index": 3},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
         "usage": {"output_tokens": 41}},
        {"type": "message_stop"},
    ]
    adapter = pydantic.TypeAdapter(at.RawMessageStreamEvent)
    return stream("anthropic", "RawMessageStreamEvent", [adapter.validate_python(e) for e in raw])


# ---- Gemini -------------------------------------------------------------------------


def gemini_response(parts, finish="STOP"):
    return gt.GenerateContentResponse.model_validate(
        {
            "candidates": [
                {
                    "content": {"role": "model", "parts": parts},
                    "finishReason": finish,
                    "index": 0,
                }
            ],
            "usageMetadata": {
                "promptTokenCount": 82,
                "candidatesTokenCount": 41,
                "totalTokenCount": 123,
            },
            "modelVersion": "gemini-3-pro",
            "responseId": "resp-fixture",
        }
    )


def gemini_parts():
    return [
        {"text": "Let me check both."},
        {
            "functionCall": {"id": "fc_w", "name": "get_weather", "args": WEATHER_ARGS},
            "thoughtSignature": "c2lnbmF0dXJl",
        },
        {"functionCall": {"id": "fc_t", "name": "get-time", "args": TIME_ARGS}},
    ]


def gemini_whole():
    model = gemini_response(gemini_parts())
    return whole(
        "google-genai",
        model,
        # What `response.model_dump_json(exclude_none=True)` gives: the SDK's snake_case names.
        snake=model.model_dump(mode="json", exclude_none=True),
    )


def gemini_stream():
    parts = gemini_parts()
    chunks = [
        gemini_response([parts[0]], finish=None),
        gemini_response([parts[1]], finish=None),
        gemini_response([parts[2]], finish="STOP"),
    ]
    texts = [
        json.dumps(c.model_dump(mode="json", by_alias=True, exclude_none=True)) for c in chunks
    ]
    return {
        "sdk": f"google-genai {VERSIONS['google-genai']}",
        "type": "GenerateContentResponse",
        "events": texts,
    }


# ---- tool names ---------------------------------------------------------------------
#
# The names each API takes in its tool definitions (docs/harness.md, "Tool names per model
# API"). OpenAI's and Gemini's come from the SDKs' own field docs, which `name_rules` reads
# from the pinned packages, so a new SDK version that words its rule differently stops
# `generate` until the rule here is looked at again. The Responses API's `FunctionToolParam`
# and Anthropic's `ToolParam` say nothing; the Responses API refuses dotted names as Chat
# Completions does ("Invalid 'tools[0].name': string does not match pattern"), and
# Anthropic's API error quotes its pattern ("String should match pattern
# '^[a-zA-Z0-9_-]{1,64}$'").

OPENAI_NAME = r"^[A-Za-z0-9_-]{1,64}$"
GEMINI_NAME = r"^[A-Za-z_][A-Za-z0-9_.:-]{0,127}$"
NAME_RULES = {
    "openai": OPENAI_NAME,
    "responses": OPENAI_NAME,
    "anthropic": OPENAI_NAME,
    "gemini": GEMINI_NAME,
}
NAME_CASES = [
    "get_weather",
    "get-weather",
    "GetWeather",
    "_private",
    "mcp__files__read_file",
    "admin.tools.list",
    "ns:find",
    "9lives",
    "a b",
    "caf\u00e9",
    "x" * 64,
    "x" * 65,
    "x" * 128,
    "x" * 129,
]


def name_rules():
    """The rules, after checking that the pinned SDKs still word them so."""
    from openai.types.shared import function_definition
    from openai.types.shared_params import function_definition as function_definition_param

    for module in (function_definition, function_definition_param):
        text = " ".join(inspect.getsource(module).split())
        said = "Must be a-z, A-Z, 0-9, or contain underscores and dashes, with a maximum length of 64."
        if said not in text:
            raise SystemExit(f"{module.__name__} no longer says {said!r}: look at NAME_RULES again")
    said = (
        "Must start with a letter or an underscore. Must be a-z, A-Z, 0-9, or contain "
        "underscores, dots, colons and dashes, with a maximum length of 128."
    )
    if said not in gt.FunctionDeclaration.model_fields["name"].description:
        raise SystemExit(f"FunctionDeclaration.name no longer says {said!r}: look at NAME_RULES")
    return NAME_RULES


def tool_names():
    rules = name_rules()
    return {
        "sdk": ", ".join(f"{name} {version}" for name, version in VERSIONS.items()),
        "type": "tool names",
        "rules": rules,
        "cases": [
            {
                "name": name,
                "accepted": {api: bool(re.fullmatch(rule, name)) for api, rule in rules.items()},
            }
            for name in NAME_CASES
        ],
    }


def check_names(data, problems):
    """Each export of the name cases: every name offered fits the API's rule, every name left
    out does not, and each case is one or the other. Returns how many exports were checked."""
    exports = data.get("name_exports", {})
    keys = {"openai": "function", "responses": None, "anthropic": None, "gemini": None}
    for api, export in exports.items():
        rule = NAME_RULES[api]
        if api == "gemini":
            offered = [d["name"] for t in export["tools"] for d in t["functionDeclarations"]]
        elif keys[api]:
            offered = [t[keys[api]]["name"] for t in export["tools"]]
        else:
            offered = [t["name"] for t in export["tools"]]
        left_out = export["left_out"]
        for name in offered:
            if not re.fullmatch(rule, name):
                problems.append(f"name_exports.{api}: {name!r} was offered, and {api} refuses it")
        for name in left_out:
            if re.fullmatch(rule, name):
                problems.append(f"name_exports.{api}: {name!r} was left out, and {api} takes it")
        if sorted(offered + left_out) != sorted(export["all"]):
            problems.append(f"name_exports.{api}: offered and left out are not all the names")
    return len(exports)


def generate(out):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    fixtures = {
        "openai_chat.json": whole(
            "openai",
            chat_completion(
                [
                    function_call("call_w", "get_weather", WEATHER_ARGS),
                    function_call("call_t", "get-time", TIME_ARGS),
                ]
            ),
        ),
        "openai_chat_custom.json": whole(
            "openai",
            chat_completion(
                [
                    {
                        "id": "call_patch",
                        "type": "custom",
                        "custom": {"name": "apply-patch", "input": CUSTOM_ITEM["input"]},
                    },
                    function_call("call_t", "get-time", TIME_ARGS),
                ]
            ),
        ),
        "openai_chat_stream.json": chat_stream(),
        "openai_responses.json": whole("openai", response(responses_output() + [CUSTOM_ITEM])),
        "openai_responses_stream.json": responses_stream(),
        "anthropic_message.json": whole("anthropic", anthropic_message(anthropic_content())),
        "anthropic_stream.json": anthropic_stream(),
        "gemini_response.json": gemini_whole(),
        "gemini_stream.json": gemini_stream(),
        "tool_names.json": tool_names(),
    }
    for name, value in fixtures.items():
        text = json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
        (out / name).write_text(text)
    print(f"wrote {len(fixtures)} fixtures to {out} ({VERSIONS})")


# ---- validate -----------------------------------------------------------------------


def exact_keys(hint, value, where, problems):
    """Checks the keys of every TypedDict in `value` against `hint`, recursively."""
    # The SDKs' TypedDicts are typing_extensions' ones, which typing's helpers do not know.
    origin = te.get_origin(hint)
    if origin in (te.Annotated, te.Required, te.NotRequired):
        return exact_keys(te.get_args(hint)[0], value, where, problems)
    if origin is typing.Union:
        # One branch must take it without a problem.
        for branch in te.get_args(hint):
            found = []
            exact_keys(branch, value, where, found)
            if not found and accepts(branch, value):
                return
        problems.append(f"{where}: no branch of {hint} takes {value!r}")
        return
    if te.is_typeddict(hint):
        if not isinstance(value, dict):
            problems.append(f"{where}: {value!r} is not an object")
            return
        allowed = hint.__required_keys__ | hint.__optional_keys__
        extra = set(value) - allowed
        missing = hint.__required_keys__ - set(value)
        if extra:
            problems.append(f"{where}: keys {sorted(extra)} are not in {hint.__name__}")
        if missing:
            problems.append(f"{where}: {hint.__name__} needs {sorted(missing)}")
        hints = te.get_type_hints(hint, include_extras=True)
        for key in set(value) & allowed:
            exact_keys(hints[key], value[key], f"{where}.{key}", problems)
        return
    if origin in (list, typing.List) or str(origin) == "<class 'collections.abc.Iterable'>":
        args = te.get_args(hint)
        if isinstance(value, list) and args:
            for i, item in enumerate(value):
                exact_keys(args[0], item, f"{where}[{i}]", problems)


def accepts(hint, value):
    try:
        pydantic.TypeAdapter(hint).validate_python(value, strict=True)
        return True
    except Exception:  # noqa: BLE001 - any refusal means "not this branch"
        return False


def check_input(hint, value, where, problems):
    try:
        pydantic.TypeAdapter(hint).validate_python(value, strict=True)
    except pydantic.ValidationError as error:
        problems.append(f"{where}: {error}")
        return
    exact_keys(hint, value, where, problems)


def check_model(model, value, where, problems):
    try:
        model.model_validate(value)
    except pydantic.ValidationError as error:
        problems.append(f"{where}: {error}")


def validate(path):
    data = json.loads(Path(path).read_text())
    problems = []
    checked = 0

    def each(key):
        return enumerate(data.get(key, []))

    for i, message in each("openai_messages"):
        check_input(oc.ChatCompletionToolMessageParam, message, f"openai_messages[{i}]", problems)
        checked += 1
    for i, tool in each("openai_tools"):
        check_input(oc.ChatCompletionFunctionToolParam, tool, f"openai_tools[{i}]", problems)
        checked += 1
    for i, item in each("responses_input"):
        hint = (
            orr.ResponseCustomToolCallOutputParam
            if item.get("type") == "custom_tool_call_output"
            else rip.FunctionCallOutput
        )
        check_input(hint, item, f"responses_input[{i}]", problems)
        checked += 1
    for i, tool in each("responses_tools"):
        check_input(orr.FunctionToolParam, tool, f"responses_tools[{i}]", problems)
        checked += 1
    for i, message in each("anthropic_messages"):
        check_input(at.MessageParam, message, f"anthropic_messages[{i}]", problems)
        for j, block in enumerate(message.get("content", [])):
            check_input(at.ToolResultBlockParam, block, f"anthropic_messages[{i}][{j}]", problems)
        checked += 1
    for i, tool in each("anthropic_tools"):
        check_input(at.ToolParam, tool, f"anthropic_tools[{i}]", problems)
        checked += 1
    # google-genai's models forbid unknown fields themselves.
    for i, content in each("gemini_contents"):
        check_model(gt.Content, content, f"gemini_contents[{i}]", problems)
        for j, part in enumerate(content.get("parts", [])):
            if "functionResponse" not in part:
                problems.append(f"gemini_contents[{i}].parts[{j}] is no functionResponse")
        checked += 1
    for i, tool in each("gemini_tools"):
        check_model(gt.Tool, tool, f"gemini_tools[{i}]", problems)
        checked += 1
    # The exports of the name cases: names each API refuses are left out, never sent.
    for api, export in data.get("name_exports", {}).items():
        hint = {
            "openai": oc.ChatCompletionFunctionToolParam,
            "responses": orr.FunctionToolParam,
            "anthropic": at.ToolParam,
        }.get(api)
        for i, tool in enumerate(export["tools"]):
            if hint:
                check_input(hint, tool, f"name_exports.{api}.tools[{i}]", problems)
            else:
                check_model(gt.Tool, tool, f"name_exports.{api}.tools[{i}]", problems)
    checked += check_names(data, problems)
    # The calls toolwire put together from the streams, against the SDKs' output types.
    streamed = {
        "openai_stream_calls": oc.ChatCompletionMessageFunctionToolCall,
        "responses_stream_calls": orr.ResponseFunctionToolCall,
        "anthropic_stream_calls": at.ToolUseBlock,
        "gemini_stream_calls": gt.Part,
    }
    for key, model in streamed.items():
        for i, call in each(key):
            if key == "responses_stream_calls" and call.get("type") == "custom_tool_call":
                model = orr.ResponseCustomToolCall
            check_model(model, call, f"{key}[{i}]", problems)
            checked += 1
    for problem in problems:
        print(f"FAIL {problem}")
    print(f"{checked} checked, {len(problems)} failed ({VERSIONS})")
    return 1 if problems or checked == 0 else 0


def main(argv):
    if len(argv) != 3 or argv[1] not in ("generate", "validate"):
        print(__doc__, file=sys.stderr)
        return 2
    if argv[1] == "generate":
        generate(argv[2])
        return 0
    return validate(argv[2])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
