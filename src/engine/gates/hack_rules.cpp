// hack_rules.cpp — lookups over the rule table (hack_rules.h).
#include "engine/gates/hack_rules.h"

namespace kevin::engine {

std::string_view rule_stage_name(RuleStage stage) {
  switch (stage) {
    case RuleStage::kSource:
      return "source";
    case RuleStage::kAnswerCheck:
      return "answer_check";
    case RuleStage::kBuild:
      return "build";
    case RuleStage::kObject:
      return "object";
    case RuleStage::kRun:
      return "run";
    case RuleStage::kTiming:
      return "timing";
  }
  return "unknown";
}

std::span<const HackRule> hack_rules() { return rules::kHackRules; }

const HackRule* find_hack_rule(std::string_view name) {
  for (const HackRule& rule : rules::kHackRules) {
    if (name == rule.name) return &rule;
  }
  return nullptr;
}

}  // namespace kevin::engine
