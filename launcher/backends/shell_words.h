#pragma once
// shellSplit: Python's shlex.split (POSIX mode, no comments), which DeepSpeed applies to --launcher_args.

#include <string>
#include <string_view>
#include <vector>

namespace dsrun::launcher {

/// Splits `text` into words as shlex.split does: blanks separate words, '...' is literal, "..." honours
/// only \\ and \", a backslash outside quotes escapes the next character. Throws ParseError
/// "<source>: no closing quotation, got '<text>'" for an unterminated quote or a trailing backslash.
std::vector<std::string> shellSplit(std::string_view text, const std::string& source);

/// Escapes '%' as '%%' so that pdsh, which expands %h, %u and %n in its command, passes `word` unchanged.
std::string escapePdshPercent(std::string_view word);

}  // namespace dsrun::launcher
