-- Drives the Neovim 0.10+ recipe of docs/editors/neovim.md (tests/e2e/test_neovim_recipe.py) as a user would:
-- opens a file of the workspace (the recipe's BufEnter starts the bridge), runs `:Agent <prompt>`, answers
-- each approval the way a vim.ui.select plugin does (Neovim 0.11 asks `window/showMessageRequest` through
-- vim.ui.select): "Reject" when the question names $ACP_TEST_REJECT, else "Allow once"; then writes what
-- the user can see to $ACP_TEST_OUT and quits.
local prompts, progress = {}, {}

vim.ui.select = function(items, opts, on_choice)
  local titles = {}
  for _, item in ipairs(items) do
    table.insert(titles, opts.format_item and opts.format_item(item) or tostring(item))
  end
  local answer = (opts.prompt or ""):find(vim.env.ACP_TEST_REJECT, 1, true) and "Reject" or "Allow once"
  table.insert(prompts, { prompt = opts.prompt, choices = titles, answer = answer })
  for i, title in ipairs(titles) do
    if title == answer then return on_choice(items[i], i) end
  end
  on_choice(nil, nil)
end

-- What the recipe's statusline shows (vim.lsp.status()) is made of these progress reports.
vim.api.nvim_create_autocmd("LspProgress", {
  callback = function(args)
    local value = args.data.params.value
    table.insert(progress, { kind = value.kind, title = value.title, message = value.message })
  end,
})

local function floats()
  local texts = {}
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_config(win).relative ~= "" then
      local lines = vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false)
      table.insert(texts, table.concat(lines, "\n"))
    end
  end
  return texts
end

local function buffers()
  local texts = {}
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.api.nvim_buf_get_name(buf)
    if name ~= "" and vim.api.nvim_buf_is_loaded(buf) then
      texts[vim.fn.fnamemodify(name, ":t")] = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
    end
  end
  return texts
end

local ok, err = pcall(function()
  vim.cmd("edit " .. vim.fn.fnameescape(vim.env.ACP_TEST_WORKSPACE .. "/" .. vim.env.ACP_TEST_FILE))
  assert(vim.wait(60000, function() return #vim.lsp.get_clients({ name = "acp-bridge" }) > 0 end, 20),
    "the bridge's LSP client never started")
  vim.cmd("Agent " .. vim.env.ACP_TEST_PROMPT)
  assert(vim.wait(60000, function() return #floats() > 0 end, 20), "no reply window appeared")
end)

local report = {
  ok = ok, error = (not ok) and tostring(err) or vim.NIL, version = tostring(vim.version()),
  floats = floats(), prompts = prompts, progress = progress, buffers = buffers(),
  messages = vim.fn.execute("messages"),
}
local out = assert(io.open(vim.env.ACP_TEST_OUT, "w"))
out:write(vim.json.encode(report))
out:close()
vim.cmd("qall!")
