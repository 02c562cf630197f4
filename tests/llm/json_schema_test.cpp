// JSON Schema -> grammar (llm/json_schema.hpp): the JSON texts each grammar takes and refuses,
// and schema mistakes named by their path.
#include "switchyard/llm/json_schema.hpp"

#include <gtest/gtest.h>

#include "switchyard/core/error.hpp"
#include "switchyard/llm/grammar.hpp"

namespace sy::llm {
namespace {

using json = nlohmann::ordered_json;

bool accepts(const json& schema, const std::string& text) {
    GrammarMatcher m(Grammar::parse(json_schema_to_gbnf(schema)));
    return m.feed(text) && m.complete();
}
std::string schema_error(const json& schema) {
    try {
        Grammar::parse(json_schema_to_gbnf(schema));
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(JsonSchema, ObjectsWithRequiredAndOptionalProperties) {
    const json schema = json::parse(R"({
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer"},
            "unit": {"enum": ["celsius", "fahrenheit"]}
        },
        "required": ["city"]
    })");
    EXPECT_TRUE(accepts(schema, R"({"city":"Paris"})"));
    EXPECT_TRUE(accepts(schema, R"({"city": "Paris", "days": 3})"));
    EXPECT_TRUE(accepts(schema, R"({"city":"Paris","unit":"celsius"})"));
    EXPECT_TRUE(accepts(schema, R"({"city":"P\u00e9ris \"x\"","days":-12,"unit":"fahrenheit"})"));
    EXPECT_FALSE(accepts(schema, R"({"days":3})"));                    // city is required
    EXPECT_FALSE(accepts(schema, R"({"city":"Paris","weather":1})"));  // no other keys
    EXPECT_FALSE(accepts(schema, R"({"city":"Paris","unit":"kelvin"})"));
    EXPECT_FALSE(accepts(schema, R"({"city":"Paris","days":3.5})"));
    EXPECT_FALSE(accepts(schema, R"({"days":3,"city":"Paris"})"));  // declared order
    EXPECT_FALSE(accepts(schema, R"({"city":"Paris",})"));
    EXPECT_FALSE(accepts(schema, R"( {"city":"Paris"})"));  // compact: no free spaces
}

TEST(JsonSchema, ScalarsArraysAndCounts) {
    EXPECT_TRUE(accepts({{"type", "number"}}, "-0.5e+10"));
    EXPECT_FALSE(accepts({{"type", "number"}}, "01"));
    EXPECT_FALSE(accepts({{"type", "number"}}, "12345678901234567"));  // 17 digits
    EXPECT_TRUE(accepts({{"type", "boolean"}}, "false"));
    EXPECT_TRUE(accepts({{"type", json::array({"string", "null"})}}, "null"));
    EXPECT_TRUE(accepts({{"type", json::array({"string", "null"})}}, "\"x\""));
    const json s = {{"type", "string"}, {"minLength", 2}, {"maxLength", 3}};
    EXPECT_FALSE(accepts(s, "\"a\""));
    EXPECT_TRUE(accepts(s, "\"ab\""));
    EXPECT_TRUE(accepts(s, "\"\\n\\u0041c\""));  // escapes count as one character each
    EXPECT_FALSE(accepts(s, "\"abcd\""));
    const json a = {
        {"type", "array"}, {"items", {{"type", "integer"}}}, {"minItems", 1}, {"maxItems", 3}};
    EXPECT_FALSE(accepts(a, "[]"));
    EXPECT_TRUE(accepts(a, "[1]"));
    EXPECT_TRUE(accepts(a, "[1, 2,3]"));
    EXPECT_FALSE(accepts(a, "[1,2,3,4]"));
    EXPECT_FALSE(accepts(a, "[\"1\"]"));
    EXPECT_TRUE(accepts({{"const", {{"a", json::array({1, nullptr})}}}}, R"({"a":[1,null]})"));
}

TEST(JsonSchema, AnyValueAnyOfAndAdditionalProperties) {
    EXPECT_TRUE(accepts(json::object(), R"({"a":[1,{"b":null}],"c":"d"})"));
    EXPECT_TRUE(accepts(true, "[true,false]"));
    EXPECT_TRUE(accepts({{"type", "object"}}, R"({"anything":{}})"));
    const json any_of = {{"anyOf", json::array({{{"type", "integer"}}, {{"type", "string"}}})}};
    EXPECT_TRUE(accepts(any_of, "7"));
    EXPECT_TRUE(accepts(any_of, "\"7\""));
    EXPECT_FALSE(accepts(any_of, "true"));
    const json open = {{"type", "object"},
                       {"properties", {{"id", {{"type", "integer"}}}}},
                       {"required", json::array({"id"})},
                       {"additionalProperties", {{"type", "boolean"}}}};
    EXPECT_TRUE(accepts(open, R"({"id":1,"x":true,"y":false})"));
    EXPECT_FALSE(accepts(open, R"({"id":1,"x":1})"));
}

TEST(JsonSchema, ReferencesIncludingRecursion) {
    const json tree = json::parse(R"({
        "$ref": "#/$defs/node",
        "$defs": {
            "node": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}
                },
                "required": ["name"]
            }
        }
    })");
    EXPECT_TRUE(
        accepts(tree, R"({"name":"a","children":[{"name":"b"},{"name":"c","children":[]}]})"));
    EXPECT_FALSE(accepts(tree, R"({"name":"a","children":[{"nome":"b"}]})"));
}

TEST(JsonSchema, MistakesNameTheirPath) {
    EXPECT_EQ(schema_error({{"type", "objekt"}}), "JSON schema: type: unknown type 'objekt'");
    EXPECT_EQ(schema_error({{"properties", {{"a", {{"type", 3}}}}}}),
              "JSON schema: properties.a.type: must be a type name or a non-empty list of them");
    EXPECT_EQ(schema_error({{"$ref", "https://example.com/s.json"}}),
              "JSON schema: $ref: 'https://example.com/s.json': only references within the "
              "schema (#/...) are supported");
    EXPECT_EQ(schema_error({{"$ref", "#/$defs/missing"}}),
              "JSON schema: $ref: '#/$defs/missing' points to nothing in the schema");
    EXPECT_EQ(schema_error({{"allOf", json::array({json::object(), json::object()})}}),
              "JSON schema: allOf: only an allOf of one schema is supported");
    EXPECT_EQ(schema_error({{"type", "array"}, {"maxItems", -1}}),
              "JSON schema: maxItems: must be a non-negative integer");
    EXPECT_EQ(schema_error(false), "JSON schema: the schema: false accepts no value");
    EXPECT_EQ(schema_error(json::array()),
              "JSON schema: the schema: a schema must be an object or a boolean");
    json deep = {{"type", "string"}};
    for (int i = 0; i < 80; ++i) deep = {{"type", "array"}, {"items", deep}};
    EXPECT_NE(schema_error(deep).find("nested deeper than 64"), std::string::npos);
}

TEST(JsonSchema, RuleNamesFromAnyPropertyNames) {
    // Keys that are no rule names, and ones that collide with the primitives' names.
    const json schema = {{"type", "object"},
                         {"properties",
                          {{"json-value", {{"type", "integer"}}},
                           {"root", {{"type", "boolean"}}},
                           {"a b/ü\"", {{"type", "null"}}}}},
                         {"required", json::array({"json-value", "root", "a b/ü\""})}};
    EXPECT_TRUE(accepts(schema, R"({"json-value":1,"root":true,"a b/ü\"":null})"));
}

}  // namespace
}  // namespace sy::llm
