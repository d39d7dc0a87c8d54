// hack_rules_test.cpp — the rule list is the one list: well formed, and every other place that
// names rules (docs/sandbox.md's table, the fixture manifests, the KernelBench checker, the
// engine's own sources) agrees with it.
#include "engine/gates/hack_rules.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "core/json.h"

namespace kevin::engine {
namespace {

namespace fs = std::filesystem;
const fs::path kRoot = KEVIN_SOURCE_DIR;

std::string text_of(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every capture of `pattern` (its first group) in `text`.
std::vector<std::string> captures(const std::string& text, const std::regex& pattern) {
  std::vector<std::string> found;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), pattern);
       it != std::sregex_iterator(); ++it)
    found.push_back((*it)[1].str());
  return found;
}

TEST(HackRules, NamesAreUniqueSnakeCaseAndInStageOrder) {
  std::set<std::string> names;
  RuleStage previous = RuleStage::kSource;
  for (const HackRule& rule : hack_rules()) {
    EXPECT_TRUE(std::regex_match(rule.name, std::regex("[a-z]+(_[a-z0-9]+)*"))) << rule.name;
    EXPECT_TRUE(names.insert(rule.name).second) << "listed twice: " << rule.name;
    EXPECT_FALSE(rule.refuses.empty()) << rule.name;
    EXPECT_GE(rule.stage, previous) << rule.name << " is out of stage order";
    previous = rule.stage;
    EXPECT_EQ(find_hack_rule(rule.name), &rule);
  }
  EXPECT_EQ(find_hack_rule("no_such_rule"), nullptr);
}

TEST(HackRules, TheSandboxDocsTableIsTheList) {
  const std::string docs = text_of(kRoot / "docs/sandbox.md");
  std::map<std::string, std::string> documented;
  for (const std::string& row : captures(docs, std::regex(R"(\n(\| `[a-z0-9_]+` \| [a-z_]+ \|))")))
    documented[row.substr(3, row.find('`', 3) - 3)] = row.substr(row.find("| ", 3) + 2);
  for (const HackRule& rule : hack_rules()) {
    ASSERT_TRUE(documented.count(rule.name)) << "docs/sandbox.md's Rules table lacks " << rule.name;
    EXPECT_EQ(documented[rule.name], std::string(rule_stage_name(rule.stage)) + " |")
        << rule.name << ": the table gives another stage";
    documented.erase(rule.name);
  }
  for (const auto& [name, stage] : documented)
    ADD_FAILURE() << "docs/sandbox.md documents " << name << ", which hack_rules.h lacks";
}

TEST(HackRules, TheKernelBenchDocsNameOnlyListedRules) {
  const std::string docs = text_of(kRoot / "docs/kernelbench.md");
  const size_t table = docs.find("| rule | what it refuses | fixture(s) |");
  ASSERT_NE(table, std::string::npos) << "docs/kernelbench.md's checker table moved";
  std::istringstream rows(docs.substr(table));
  std::string row;
  size_t named = 0;
  while (std::getline(rows, row) && row.rfind("|", 0) == 0) {
    const std::string first_cell = row.substr(0, row.find('|', 1));
    for (const std::string& rule : captures(first_cell, std::regex("`([a-z0-9_]+)`"))) {
      ++named;
      EXPECT_NE(find_hack_rule(rule), nullptr) << "docs/kernelbench.md names " << rule;
    }
  }
  EXPECT_GT(named, 20u);
}

TEST(HackRules, EveryRuleAFixtureExpectsIsListed) {
  const auto manifest = parse_json(text_of(kRoot / "tests/fixtures/kernels/manifest.json"));
  ASSERT_TRUE(manifest.is_ok()) << manifest.status().to_string();
  size_t named = 0;
  for (const Json& entry : *manifest) {
    if (!entry.contains("rule") || !entry["rule"].is_string()) continue;
    ++named;
    EXPECT_NE(find_hack_rule(entry["rule"].get<std::string>()), nullptr)
        << entry["file"] << " expects an unlisted rule " << entry["rule"];
  }
  EXPECT_GT(named, 0u) << "the manifest names no rule: the check checked nothing";
  size_t kernelbench = 0;
  for (const auto& file : fs::directory_iterator(kRoot / "tests/fixtures/kernelbench")) {
    for (const std::string& rule :
         captures(text_of(file.path()), std::regex(R"(# verdict: rejected ([a-z0-9_]+))"))) {
      ++kernelbench;
      EXPECT_NE(find_hack_rule(rule), nullptr) << file.path().filename() << " expects " << rule;
    }
  }
  EXPECT_GT(kernelbench, 0u);
}

TEST(HackRules, TheKernelBenchCheckerFiresOnlyListedRules) {
  const std::string checker = text_of(kRoot / "src/tasks/kernelbench_check.py");
  std::smatch order;
  ASSERT_TRUE(std::regex_search(checker, order, std::regex(R"(RULE_ORDER = \[([^\]]*)\])")));
  const std::vector<std::string> rules =
      captures(order[1].str(), std::regex(R"#("([a-z0-9_]+)")#"));
  EXPECT_GT(rules.size(), 10u);
  for (const std::string& rule : rules)
    EXPECT_NE(find_hack_rule(rule), nullptr) << "the checker's " << rule << " is not listed";
}

TEST(HackRules, TheEngineFiresRulesByTheirConstantsOnly) {
  // A rule spelled as a literal where it fires is a second list in the making.
  for (const auto& file : fs::recursive_directory_iterator(kRoot / "src/engine")) {
    const std::string name = file.path().filename().string();
    if (file.path().extension() != ".cpp" || name.find("_test") != std::string::npos ||
        name == "hack_rules.cpp")
      continue;
    const std::string source = text_of(file.path());
    // A rule named by a literal the list lacks.
    for (const std::string& literal :
         captures(source, std::regex(R"#((?:Rejection\{|rejected\w*\(\{)\s*"([a-z0-9_]+)")#")))
      ADD_FAILURE() << name << " fires \"" << literal << "\" by a literal: add it to hack_rules";
    for (const HackRule& rule : hack_rules()) {
      EXPECT_EQ(source.find("\"" + std::string(rule.name) + "\""), std::string::npos)
          << name << " spells \"" << rule.name << "\": use rules::k... from hack_rules.h";
    }
  }
}

}  // namespace
}  // namespace kevin::engine
