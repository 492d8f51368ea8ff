// Checks on error messages and other text. EXPECT_HAS(text, part): `part` occurs in `text`; on failure the
// whole text is printed, so the message a user would see is in the test log.
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace wgi::test {

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace wgi::test

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)
