// chat.h — one message of a chat conversation: what the environment's prompts are made of
// and what every policy (model client) answers. A vocabulary type, so that model clients
// need nothing of the environment.
#pragma once

#include <string>

namespace kevin {

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
};

}  // namespace kevin
