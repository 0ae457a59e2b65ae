-- Drives CodeCompanion's chat as a user would (tests/e2e/test_codecompanion.py): `:CodeCompanionChat`, waits
-- for the agent's session, types $ACP_TEST_PROMPT under `## Me` and submits it; answers each approval in
-- the chat buffer with the keys it offers (`g2` Accept, `g3` Reject): Reject when the question is about
-- $ACP_TEST_REJECT. When the turn is done, writes what the chat buffer shows (its text and the status icons
-- drawn beside tool calls) to $ACP_TEST_OUT and quits.
local events, answers = {}, {}
local done = false

local function approval_block(text)
  -- The last approval question in the chat: from its bold title line on.
  local at, from = 1, nil
  while true do
    local found = text:find("\n%*%*[^\n]*%*%*\n", at)
    if not found then break end
    from, at = found, found + 1
  end
  return from and text:sub(from) or ""
end

vim.api.nvim_create_autocmd("User", {
  pattern = "CodeCompanion*",
  callback = function(args)
    table.insert(events, args.match)
    if args.match == "CodeCompanionChatDone" then done = true end
    if args.match == "CodeCompanionToolApprovalRequested" then
      local bufnr = args.data.bufnr
      vim.schedule(function()
        local text = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n")
        local block = approval_block(text)
        local key = block:find("`" .. vim.env.ACP_TEST_REJECT .. "`", 1, true) and "g3" or "g2"
        table.insert(answers, { question = block, key = key })
        vim.api.nvim_buf_call(bufnr, function() vim.cmd("normal " .. key) end)
      end)
    end
  end,
})

local chat
local ok, err = pcall(function()
  vim.cmd("edit " .. vim.fn.fnameescape(vim.env.ACP_TEST_WORKSPACE .. "/app.py"))
  vim.cmd("CodeCompanionChat")
  chat = require("codecompanion").last_chat()
  assert(chat, "no chat buffer opened")
  -- As a user waits for the chat to be ready (the agent started, its session made) before sending.
  assert(vim.wait(30000, function() return chat.acp_connection and chat.acp_connection:is_connected() end, 20),
    "the agent's session never started")
  vim.api.nvim_buf_set_lines(chat.bufnr, -1, -1, false, { vim.env.ACP_TEST_PROMPT })
  vim.api.nvim_set_current_win(vim.fn.bufwinid(chat.bufnr))
  vim.cmd("normal \r") -- <CR> in normal mode sends
  assert(vim.wait(60000, function() return done end, 20), "the turn never finished")
end)

local marks = {}
if chat then
  for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(chat.bufnr, -1, 0, -1, { details = true })) do
    local virt = mark[4].virt_text
    if virt and virt[1] then
      local line = vim.api.nvim_buf_get_lines(chat.bufnr, mark[2], mark[2] + 1, false)[1] or ""
      table.insert(marks, { line = line, highlight = virt[1][2] })
    end
  end
end
local report = {
  ok = ok, error = (not ok) and tostring(err) or vim.NIL, version = tostring(vim.version()),
  events = events, answers = answers, marks = marks,
  chat = chat and table.concat(vim.api.nvim_buf_get_lines(chat.bufnr, 0, -1, false), "\n") or vim.NIL,
  messages = vim.fn.execute("messages"),
}
local out = assert(io.open(vim.env.ACP_TEST_OUT, "w"))
out:write(vim.json.encode(report))
out:close()
vim.cmd("qall!")
