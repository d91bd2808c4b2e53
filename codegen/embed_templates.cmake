# Embeds the launcher templates (codegen/templates) as C++ raw string literals.
# Usage: cmake -DIN_DIR=... -DOUT=... -P embed_templates.cmake
file(READ "${IN_DIR}/launcher_main.cpp" main)
file(READ "${IN_DIR}/launcher.h" header)
file(WRITE "${OUT}" "// Generated from codegen/templates by embed_templates.cmake.\n#pragma once\n")
file(APPEND "${OUT}" "inline constexpr const char* kLauncherMainTemplate = R\"PLANNER_TEMPLATE(${main})PLANNER_TEMPLATE\";\n")
file(APPEND "${OUT}" "inline constexpr const char* kLauncherHeaderTemplate = R\"PLANNER_TEMPLATE(${header})PLANNER_TEMPLATE\";\n")
