// The grammar of the tool calls a request forces (tool_choice "required" or a named function;
// llm/grammar.hpp): a block of calls in the template's markup, each call's arguments held to its
// function's parameter schema. A prompt that leaves the model inside an R1 reasoning block gets
// "</think>" first, so that the forced text is the answer, not reasoning.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "switchyard/core/error.hpp"
#include "switchyard/llm/chat_formatter.hpp"
#include "switchyard/llm/json_schema.hpp"
#include "tool_calls.hpp"

namespace sy::server {

// Checks OpenAI's function tools: [{"type": "function", "function": {"name": "...",
// "parameters": {...}}}]. Throws sy::Error naming the tools[i] field at fault.
inline void check_tools(const nlohmann::ordered_json& tools) {
    for (size_t i = 0; i < tools.size(); ++i) {
        const std::string at = "tools[" + std::to_string(i) + "]";
        const nlohmann::ordered_json& t = tools[i];
        if (!t.is_object() || t.value("type", "") != "function")
            throw Error(at + " must be an object with \"type\": \"function\"");
        const auto f = t.find("function");
        if (f == t.end() || !f->is_object()) throw Error(at + ".function must be an object");
        const auto name = f->find("name");
        if (name == f->end() || !name->is_string() || name->get<std::string>().empty())
            throw Error(at + ".function.name must be a non-empty string");
        const auto params = f->find("parameters");
        if (params != f->end() && !params->is_object() && !params->is_null())
            throw Error(at + ".function.parameters must be a JSON Schema object");
    }
}

// The grammar's first rule when the prompt leaves the model inside a reasoning block.
inline std::string close_reasoning(bool inside) {
    return inside ? "\"</think>\" \"\\n\"{0,2} " : "";
}

// A block of calls of `tools` (checked), of the function `only` when not empty; one call, or
// one or more when `parallel`.
inline std::string tool_call_grammar(const nlohmann::ordered_json& tools, const std::string& only,
                                     bool parallel, llm::ToolCallMarkup markup,
                                     bool inside_reasoning) {
    using llm::JsonSchemaGrammar;
    const bool v3 = markup == llm::ToolCallMarkup::deepseek_v3;
    JsonSchemaGrammar schemas;
    std::string calls;
    for (size_t i = 0; i < tools.size(); ++i) {
        const nlohmann::ordered_json& f = tools[i]["function"];
        const std::string name = f["name"].get<std::string>();
        if (!only.empty() && name != only) continue;
        static const nlohmann::ordered_json any_object = {{"type", "object"}};
        const auto p = f.find("parameters");
        const nlohmann::ordered_json& params = p != f.end() && p->is_object() ? *p : any_object;
        std::string args;
        try {
            args = schemas.add(params, "args-" + name, params);
        } catch (const Error& e) {
            throw Error("tools[" + std::to_string(i) + "].function.parameters: " + e.what());
        }
        const std::string head =
            v3 ? JsonSchemaGrammar::literal(name + "\n```json\n")
               : JsonSchemaGrammar::literal(name + std::string(ToolCallParser::kSep));
        const std::string tail = v3 ? " \"\\n```\"" : "";
        calls += (calls.empty() ? "" : " | ") + std::string("( ") + head + " " + args + tail + " )";
    }
    if (calls.empty()) throw Error("no tool is named '" + only + "'");
    const std::string begin = v3 ? std::string(ToolCallParser::kCallBegin) + "function" +
                                       std::string(ToolCallParser::kSep)
                                 : std::string(ToolCallParser::kCallBegin);
    std::string g = "root ::= " + close_reasoning(inside_reasoning) +
                    JsonSchemaGrammar::literal(ToolCallParser::kBlockBegin) + " call " +
                    (parallel ? std::string(v3 ? "( \"\\n\" call )* " : "call* ") : "") +
                    JsonSchemaGrammar::literal(ToolCallParser::kBlockEnd) + "\n";
    g += "call ::= " + JsonSchemaGrammar::literal(begin) + " ( " + calls + " ) " +
         JsonSchemaGrammar::literal(ToolCallParser::kCallEnd) + "\n";
    return g + schemas.text();
}

}  // namespace sy::server
