// A Jinja2 interpreter for chat templates: the `tokenizer.chat_template` text of GGUF files,
// rendered the way HuggingFace's apply_chat_template renders it with Python's jinja2
// (trim_blocks, lstrip_blocks, the loopcontrols extension, raise_exception(msg),
// strftime_now(fmt), and HF's tojson: json.dumps with ensure_ascii=False and the keys in their
// order).
//
// The subset is what real chat templates use: text and {{ }} output with whitespace control
// (-, +, comments); {% if/elif/else %}, {% for %} (loop.*, else, break, continue, tuple targets,
// `if` filter), {% set %} (names, tuples, namespace attributes, blocks with filters),
// {% macro %}, {% generation %} (HF's tag); Python expressions with its values and errors
// (None + 'a' fails as in Python; ints are 64-bit, where overflow is an error); the filters
// trim, tojson, length/count, string, int, float, lower, upper, replace, join, first, last,
// default/d, list, items, map, select, reject, selectattr, rejectattr, safe, e/escape and
// from_json (json.loads, which some DeepSeek templates call); the common tests; str's strip,
// lstrip, rstrip, split, rsplit, startswith, endswith, replace, upper, lower, title, find and
// join; dict's items, keys, values and get; namespace(), range(), dict(). Values print as
// Python's str() prints them; undefined variables behave as jinja2's default Undefined. Anything
// else (raw, include, call, filter blocks, str.format, `%` formatting, other filters) is an error
// naming it, never a crash or a hang: the nesting depth, the evaluation steps, range() and the
// size of the output and of every string are bounded.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace sy::llm::jinja {

class Template {
  public:
    // Parses `source`; throws sy::Error naming the line and column and the construct it cannot
    // parse ("jinja: line 3, column 4: unsupported tag 'call'").
    explicit Template(std::string source);

    // Renders with `context`, an object (messages, add_generation_prompt, bos_token, ...).
    // Throws sy::Error for a runtime error, naming the line ("jinja: line 7: ..."), and for
    // raise_exception(msg), with msg in the message. The ordered_json form keeps the keys of
    // objects in their order, as Python's dicts do (tojson and dict.items() show it).
    std::string render(const nlohmann::json& context) const;
    std::string render(const nlohmann::ordered_json& context) const;

    struct Impl;

  private:
    std::shared_ptr<const Impl> impl_;
};

}  // namespace sy::llm::jinja
