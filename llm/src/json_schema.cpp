#include "switchyard/llm/json_schema.hpp"

#include <vector>

#include "switchyard/core/error.hpp"

namespace sy::llm {
namespace {

using json = nlohmann::ordered_json;

// Nesting deeper than this is no schema a person wrote; it is refused before the stack is.
constexpr int kMaxDepth = 64;
// Counts beyond what the grammar writes out as repetitions: longer strings are unbounded,
// larger item counts refused.
constexpr int64_t kMaxCount = 4096;

// The JSON primitives, each with the others it uses.
struct Primitive {
    const char* name;
    const char* body;
    std::vector<const char*> uses;
};
const std::vector<Primitive>& primitives() {
    static const std::vector<Primitive> list = {
        {"json-value",
         "json-object | json-array | json-string | json-number | json-bool | json-null",
         {"json-object", "json-array", "json-string", "json-number", "json-bool", "json-null"}},
        {"json-object",
         R"("{" ( json-string ":" " "? json-value ( "," " "? json-string ":" " "? json-value )* )? "}")",
         {"json-string", "json-value"}},
        {"json-array", R"("[" ( json-value ( "," " "? json-value )* )? "]")", {"json-value"}},
        {"json-string", R"("\"" json-char* "\"")", {"json-char"}},
        {"json-char", R"([^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ))", {}},
        {"json-number",
         R"(json-integer ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,3} )?)",
         {"json-integer"}},
        {"json-integer", R"("-"? ( "0" | [1-9] [0-9]{0,15} ))", {}},
        {"json-bool", R"("true" | "false")", {}},
        {"json-null", R"("null")", {}},
    };
    return list;
}

[[noreturn]] void bad(const std::string& path, const std::string& what) {
    throw Error("JSON schema: " + (path.empty() ? std::string("the schema") : path) + ": " + what);
}

std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
}

// A rule name from free text: letters, digits and '-'.
std::string rule_name(std::string_view text) {
    std::string name;
    for (const char c : text) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        name += ok ? c : '-';
    }
    return name.empty() ? std::string("value") : name;
}

int64_t count(const json& schema, const char* key, const std::string& path, int64_t fallback) {
    const auto it = schema.find(key);
    if (it == schema.end()) return fallback;
    if (!it->is_number_integer() || it->get<int64_t>() < 0)
        bad(join(path, key), "must be a non-negative integer");
    return it->get<int64_t>();
}

}  // namespace

std::string JsonSchemaGrammar::literal(std::string_view text) {
    std::string out = "\"";
    for (const char c : text) {
        const auto b = uint8_t(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (b < 0x20) {
            static const char hex[] = "0123456789ABCDEF";
            out += "\\x";
            out += hex[b >> 4];
            out += hex[b & 15];
        } else {
            out += c;
        }
    }
    return out + "\"";
}

std::string JsonSchemaGrammar::primitive(const std::string& name) {
    std::vector<std::string> todo{name};
    while (!todo.empty()) {
        const std::string n = todo.back();
        todo.pop_back();
        if (!primitives_.insert(n).second) continue;
        for (const Primitive& p : primitives())
            if (n == p.name)
                for (const char* u : p.uses) todo.emplace_back(u);
    }
    return name;
}

std::string JsonSchemaGrammar::rule(const std::string& name, const std::string& body) {
    // json-* and root are the primitives' and the whole grammar's.
    const std::string base = name.starts_with("json-") || name == "root" ? "x-" + name : name;
    std::string unique = base;
    for (int i = 2; rules_.contains(unique); ++i) unique = base + "-" + std::to_string(i);
    rules_[unique] = body;
    return unique;
}

std::string JsonSchemaGrammar::add(const json& schema, std::string_view name,
                                   const json& root_schema) {
    root_ = &root_schema;
    refs_.clear();  // a $ref means a place in this root
    depth_ = 0;
    const std::string body = expression(schema, rule_name(name), "");
    return rule(rule_name(name), body);
}

std::string JsonSchemaGrammar::text() const {
    std::string out;
    for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
    for (const Primitive& p : primitives())
        if (primitives_.contains(p.name)) out += std::string(p.name) + " ::= " + p.body + "\n";
    return out;
}

std::string JsonSchemaGrammar::expression(const json& schema, const std::string& name,
                                          const std::string& path) {
    if (++depth_ > kMaxDepth) bad(path, "nested deeper than " + std::to_string(kMaxDepth));
    struct Leave {
        int& depth;
        ~Leave() { --depth; }
    } leave{depth_};

    if (schema.is_boolean()) {
        if (!schema.get<bool>()) bad(path, "false accepts no value");
        return primitive("json-value");
    }
    if (!schema.is_object()) bad(path, "a schema must be an object or a boolean");
    if (const auto it = schema.find("$ref"); it != schema.end()) {
        if (!it->is_string()) bad(join(path, "$ref"), "must be a string");
        return reference(it->get<std::string>(), join(path, "$ref"));
    }
    if (const auto it = schema.find("const"); it != schema.end()) return literal(it->dump());
    if (const auto it = schema.find("enum"); it != schema.end()) {
        if (!it->is_array() || it->empty()) bad(join(path, "enum"), "must be a non-empty array");
        std::string alts;
        for (const json& v : *it) alts += (alts.empty() ? "" : " | ") + literal(v.dump());
        return "( " + alts + " )";
    }
    for (const char* key : {"anyOf", "oneOf"}) {
        const auto it = schema.find(key);
        if (it == schema.end()) continue;
        const std::string where = join(path, key);
        if (!it->is_array() || it->empty()) bad(where, "must be a non-empty array of schemas");
        std::string alts;
        for (size_t i = 0; i < it->size(); ++i) {
            const std::string n = name + "-" + std::to_string(i);
            const std::string e = expression((*it)[i], n, where + "[" + std::to_string(i) + "]");
            alts += (alts.empty() ? "" : " | ") + rule(n, e);
        }
        return "( " + alts + " )";
    }
    if (const auto it = schema.find("allOf"); it != schema.end()) {
        if (!it->is_array() || it->size() != 1)
            bad(join(path, "allOf"), "only an allOf of one schema is supported");
        return expression((*it)[0], name, join(path, "allOf") + "[0]");
    }

    std::vector<std::string> types;
    if (const auto it = schema.find("type"); it != schema.end()) {
        if (it->is_string()) {
            types.push_back(it->get<std::string>());
        } else if (it->is_array() && !it->empty()) {
            for (const json& t : *it) {
                if (!t.is_string()) bad(join(path, "type"), "must list type names");
                types.push_back(t.get<std::string>());
            }
        } else {
            bad(join(path, "type"), "must be a type name or a non-empty list of them");
        }
    } else if (schema.contains("properties") || schema.contains("additionalProperties") ||
               schema.contains("required")) {
        types.push_back("object");
    } else if (schema.contains("items")) {
        types.push_back("array");
    } else if (schema.contains("minLength") || schema.contains("maxLength")) {
        types.push_back("string");
    } else {
        return primitive("json-value");
    }
    std::string alts;
    for (const std::string& t : types) {
        std::string e;
        if (t == "object")
            e = object(schema, name, path);
        else if (t == "array")
            e = array(schema, name, path);
        else if (t == "string")
            e = string(schema, path);
        else if (t == "integer")
            e = primitive("json-integer");
        else if (t == "number")
            e = primitive("json-number");
        else if (t == "boolean")
            e = primitive("json-bool");
        else if (t == "null")
            e = primitive("json-null");
        else
            bad(join(path, "type"), "unknown type '" + t + "'");
        alts += (alts.empty() ? "" : " | ") + e;
    }
    return types.size() == 1 ? alts : "( " + alts + " )";
}

std::string JsonSchemaGrammar::object(const json& schema, const std::string& name,
                                      const std::string& path) {
    struct Property {
        std::string key;
        const json* schema;
        bool required;
    };
    std::vector<Property> props;
    std::set<std::string> required;
    if (const auto it = schema.find("required"); it != schema.end()) {
        if (!it->is_array()) bad(join(path, "required"), "must be an array of property names");
        for (const json& r : *it) {
            if (!r.is_string()) bad(join(path, "required"), "must be an array of property names");
            required.insert(r.get<std::string>());
        }
    }
    static const json any = true;
    if (const auto it = schema.find("properties"); it != schema.end()) {
        if (!it->is_object()) bad(join(path, "properties"), "must be an object");
        for (const auto& [key, sub] : it->items())
            props.push_back({key, &sub, required.contains(key)});
    }
    for (const std::string& r : required) {
        bool listed = false;
        for (const Property& p : props) listed = listed || p.key == r;
        if (!listed) props.push_back({r, &any, true});
    }
    // Other keys: only with additionalProperties true or a schema, or in an object schema
    // that names no properties at all.
    const auto additional = schema.find("additionalProperties");
    if (props.empty() && additional == schema.end()) return primitive("json-object");
    const bool open =
        additional != schema.end() && !(additional->is_boolean() && !additional->get<bool>());
    std::string extra;
    if (open) {
        const json& value_schema = additional != schema.end() ? *additional : any;
        const std::string v =
            expression(value_schema, name + "-value", join(path, "additionalProperties"));
        extra = rule(name + "-extra", primitive("json-string") + " \":\" \" \"? " + v);
    }

    // tail(i, first): the properties from i on; `first`: nothing written before them.
    const size_t n = props.size();
    std::vector<std::string> kv(n);
    for (size_t i = 0; i < n; ++i) {
        const std::string value = expression(*props[i].schema, name + "-" + rule_name(props[i].key),
                                             join(path, "properties." + props[i].key));
        kv[i] = rule(name + "-" + rule_name(props[i].key) + "-kv",
                     literal(json(props[i].key).dump()) + " \":\" \" \"? " + value);
    }
    const std::string comma = "\",\" \" \"? ";
    std::vector<std::string> tail_first(n + 1), tail_rest(n + 1);
    tail_first[n] = extra.empty() ? "\"\"" : "( " + extra + " ( " + comma + extra + " )* )?";
    tail_rest[n] = extra.empty() ? "\"\"" : "( " + comma + extra + " )*";
    for (size_t i = n; i-- > 0;) {
        const std::string after = rule(name + "-rest", tail_rest[i + 1]);
        if (props[i].required) {
            tail_first[i] = kv[i] + " " + after;
            tail_rest[i] = comma + kv[i] + " " + after;
        } else {
            const std::string skip_first = rule(name + "-rest", tail_first[i + 1]);
            tail_first[i] = "( " + kv[i] + " " + after + " | " + skip_first + " )";
            tail_rest[i] = "( " + comma + kv[i] + " " + after + " | " + after + " )";
        }
    }
    return "\"{\" " + tail_first[0] + " \"}\"";
}

std::string JsonSchemaGrammar::array(const json& schema, const std::string& name,
                                     const std::string& path) {
    static const json any = true;
    const auto items = schema.find("items");
    const std::string item = rule(name + "-item", expression(items != schema.end() ? *items : any,
                                                             name + "-item", join(path, "items")));
    const int64_t min = count(schema, "minItems", path, 0);
    const int64_t max = count(schema, "maxItems", path, -1);
    if (min > kMaxCount || max > kMaxCount)
        bad(path, "item counts above " + std::to_string(kMaxCount) + " are not supported");
    if (max >= 0 && max < min) bad(join(path, "maxItems"), "is below minItems");
    const std::string more = "( \",\" \" \"? " + item + " )";
    if (max == 0) return "\"[\" \"]\"";
    const std::string tail = max < 0 ? more + "*"
                                     : more + "{" + std::to_string(min > 0 ? min - 1 : 0) + "," +
                                           std::to_string(max - 1) + "}";
    if (min == 0) return "\"[\" ( " + item + " " + tail + " )? \"]\"";
    return "\"[\" " + item + " " + tail + " \"]\"";
}

std::string JsonSchemaGrammar::string(const json& schema, const std::string& path) {
    const int64_t min = count(schema, "minLength", path, 0);
    int64_t max = count(schema, "maxLength", path, -1);
    if (min > kMaxCount)
        bad(join(path, "minLength"), "above " + std::to_string(kMaxCount) + " is not supported");
    if (max >= 0 && max < min) bad(join(path, "maxLength"), "is below minLength");
    if (max > kMaxCount) max = -1;
    if (min == 0 && max < 0) return primitive("json-string");
    primitive("json-char");
    const std::string reps =
        "{" + std::to_string(min) + "," + (max < 0 ? std::string() : std::to_string(max)) + "}";
    return R"("\"" json-char)" + reps + R"( "\"")";
}

std::string JsonSchemaGrammar::reference(const std::string& ref, const std::string& path) {
    if (const auto it = refs_.find(ref); it != refs_.end()) return it->second;
    if (!ref.starts_with("#/"))
        bad(path, "'" + ref + "': only references within the schema (#/...) are supported");
    const json* at = root_;
    std::string part;
    const auto descend = [&] {
        std::string key;
        for (size_t i = 0; i < part.size(); ++i) {
            if (part[i] == '~' && i + 1 < part.size() &&
                (part[i + 1] == '0' || part[i + 1] == '1')) {
                key += part[i + 1] == '0' ? '~' : '/';
                ++i;
            } else {
                key += part[i];
            }
        }
        if (!at->is_object() || !at->contains(key))
            bad(path, "'" + ref + "' points to nothing in the schema");
        at = &(*at)[key];
        part.clear();
    };
    for (size_t i = 2; i < ref.size(); ++i) {
        if (ref[i] == '/')
            descend();
        else
            part += ref[i];
    }
    descend();
    // The name is taken before the body is built, so a schema that refers to itself refers
    // to its own rule.
    const std::string name = rule(rule_name(ref.substr(ref.rfind('/') + 1)), "\"\"");
    refs_[ref] = name;
    rules_[name] = expression(*at, name, path + "(" + ref + ")");
    return name;
}

std::string json_schema_to_gbnf(const json& schema, std::string_view prefix) {
    JsonSchemaGrammar g;
    const std::string value = g.add(schema, "value");
    return "root ::= " + std::string(prefix) + value + "\n" + g.text();
}

}  // namespace sy::llm
