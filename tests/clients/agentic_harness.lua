-- Drives agentic.nvim's chat as a user would (tests/e2e/test_agentic_nvim.py): opens it on app.py, waits for
-- the agent's session (its welcome header in the chat), types $ACP_TEST_PROMPT in the input and sends it
-- with <C-s>; answers each "Waiting for your response" with its number key in the chat buffer: the
-- "Reject" one when the tool call above it names $ACP_TEST_REJECT, else the "Allow" one. When the turn's
-- end mark (🏁) shows, writes the chat buffer's text to $ACP_TEST_OUT and quits.
local answers = {}

local function buffer_of(filetype)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_valid(buf) and vim.bo[buf].filetype == filetype then return buf end
  end
end

local function text_of(buf)
  return buf and table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n") or ""
end

local function answer_pending(chat)
  local lines = vim.api.nvim_buf_get_lines(chat, 0, -1, false)
  local waiting
  for i = #lines, 1, -1 do
    if lines[i]:find("^### Waiting for your response") then waiting = i break end
  end
  if not waiting or waiting == answers.last_row then return end
  local options = {}
  for i = waiting + 1, #lines do
    local number, name = lines[i]:match("^%- %[(%d+)%] .-(%a[%a ]*)$")
    if number then options[name] = number end
  end
  if not next(options) then return end
  -- The tool call asked about: its block, from its `kind(title)` header down to the question.
  local header = waiting
  while header > 1 and not lines[header]:find("^%l+%(") do header = header - 1 end
  local above = table.concat(vim.list_slice(lines, header, waiting), "\n")
  local reject = above:find(vim.env.ACP_TEST_REJECT, 1, true) ~= nil
  local key = reject and options["Reject"] or options["Allow once"]
  answers.last_row = waiting
  table.insert(answers, { question = above, key = key, reject = reject, options = options })
  vim.api.nvim_buf_call(chat, function() vim.cmd("normal " .. key) end)
end

local ok, err = pcall(function()
  vim.cmd("edit " .. vim.fn.fnameescape(vim.env.ACP_TEST_WORKSPACE .. "/app.py"))
  require("agentic").open()
  local chat, input = buffer_of("AgenticChat"), buffer_of("AgenticInput")
  assert(chat and input, "the chat did not open")
  assert(vim.wait(30000, function() return text_of(chat):find("# Agentic %- ") ~= nil end, 20),
    "the agent's session never started")
  vim.api.nvim_buf_set_lines(input, 0, -1, false, { vim.env.ACP_TEST_PROMPT })
  vim.api.nvim_set_current_win(vim.fn.bufwinid(input))
  vim.cmd("normal \19") -- <C-s> sends
  assert(vim.wait(60000, function()
    answer_pending(chat)
    return text_of(chat):find("### 🏁") ~= nil
  end, 50), "the turn never finished")
end)

answers.last_row = nil
local report = {
  ok = ok, error = (not ok) and tostring(err) or vim.NIL, version = tostring(vim.version()),
  answers = answers, chat = text_of(buffer_of("AgenticChat")), messages = vim.fn.execute("messages"),
}
local out = assert(io.open(vim.env.ACP_TEST_OUT, "w"))
out:write(vim.json.encode(report))
out:close()
vim.cmd("qall!")
