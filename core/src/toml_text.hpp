// Every TOML text the core reads (configuration files, cost tables) goes through parse_toml:
// toml++ gets pure ASCII (see toml_text.cpp for why and how), and its parse errors become
// ConfigError naming the file, line and column.
#pragma once

#include <toml++/toml.h>

#include <filesystem>
#include <string_view>

namespace sy {

toml::table parse_toml(std::string_view text, const std::filesystem::path& source_name);

}  // namespace sy
