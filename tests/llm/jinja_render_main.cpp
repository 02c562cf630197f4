// jinja_render TEMPLATE_FILE CONTEXT_JSON_FILE: prints the template rendered with the context
// (the exact bytes), or the error on stderr with exit status 1. jinja_vs_python.sh compares
// this with Python's jinja2.
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "switchyard/llm/jinja.hpp"

namespace {

std::string read_file(const char* path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(std::string("cannot read ") + path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::cerr << "usage: jinja_render TEMPLATE_FILE CONTEXT_JSON_FILE\n";
        return 2;
    }
    try {
        const sy::llm::jinja::Template tpl(read_file(argv[1]));
        // ordered_json keeps the keys of objects in their order, as Python's json.load does.
        const std::string out = tpl.render(nlohmann::ordered_json::parse(read_file(argv[2])));
        std::cout.write(out.data(), std::streamsize(out.size()));
        std::cout.flush();
        return std::cout ? 0 : 1;
    } catch (const std::exception& e) {
        std::cerr << e.what() << "\n";
        return 1;
    }
}
