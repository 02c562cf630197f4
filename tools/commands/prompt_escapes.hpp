// llama.cpp's escape processing of -p (on by default there, off with --no-escape): \n, \r, \t,
// \v, \f, \a, \b, \', \", \?, \\ and \xHH (one or two hex digits) become the characters they
// name; any other backslash (an unknown escape, a trailing one, \x without a hex digit) stays as
// written.
#pragma once

#include <string>
#include <string_view>

namespace sy::tools {

std::string process_escapes(std::string_view text);

}  // namespace sy::tools
