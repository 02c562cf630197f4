// JSON Schema -> a GBNF grammar (grammar.hpp) whose sentences are the JSON texts the schema
// accepts, written compactly (a space may follow `:` and `,`, nowhere else), the way
// llama-server constrains `response_format`, `json_schema` and tool-call arguments.
//
// Understood: type (one or a list), properties (in their order; those in `required` must
// appear, the others may), additionalProperties (false unless given: a model left free to add
// keys wanders), items, minItems, maxItems, minLength, maxLength, enum, const, anyOf, oneOf,
// allOf of one schema, $ref into #/$defs or #/definitions (recursion included), true / {} for
// any JSON value. Numbers have at most 16 integer and 16 fraction digits. Keywords that only
// describe (title, description, default, examples) and the ones not enforced (pattern,
// format, minimum, maximum, multipleOf) are read past.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>

namespace sy::llm {

class JsonSchemaGrammar {
  public:
    // `root_schema` is what $refs point into (the schema itself, or the tool's parameters).
    // Adds the rules for `schema` and returns the name of the rule that matches it; `name`
    // becomes part of the rules' names. Throws sy::Error naming the schema path
    // ("properties.city.type") of what cannot be read.
    std::string add(const nlohmann::ordered_json& schema, std::string_view name,
                    const nlohmann::ordered_json& root_schema);
    std::string add(const nlohmann::ordered_json& schema, std::string_view name) {
        return add(schema, name, schema);
    }

    // The rules so far, the JSON primitives they use included, as GBNF text.
    std::string text() const;

    // The GBNF literal for `text` ("..." with escapes).
    static std::string literal(std::string_view text);

  private:
    // A GBNF expression for `schema`, found at `path`.
    std::string expression(const nlohmann::ordered_json& schema, const std::string& name,
                           const std::string& path);
    std::string object(const nlohmann::ordered_json& schema, const std::string& name,
                       const std::string& path);
    std::string array(const nlohmann::ordered_json& schema, const std::string& name,
                      const std::string& path);
    std::string string(const nlohmann::ordered_json& schema, const std::string& path);
    std::string reference(const std::string& ref, const std::string& path);
    // A new rule `body` under a unique name built from `name`; returns the name.
    std::string rule(const std::string& name, const std::string& body);
    std::string primitive(const std::string& name);  // json-value, json-string, ...

    const nlohmann::ordered_json* root_ = nullptr;
    std::map<std::string, std::string> rules_;  // name -> body, in name order
    std::map<std::string, std::string> refs_;   // $ref -> its rule's name
    std::set<std::string> primitives_;
    int depth_ = 0;
};

// A whole grammar for one schema: `root ::= PREFIX VALUE` and what it uses; `prefix` is GBNF
// for what comes before the value ("": nothing).
std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema, std::string_view prefix = {});

}  // namespace sy::llm
