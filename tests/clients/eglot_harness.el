;;; eglot_harness.el --- drives the eglot recipe of docs/editors/emacs.md (tests/e2e/test_emacs.py)  -*- lexical-binding: t; -*-
;; As a user would, in Emacs in batch mode: visits $ACP_TEST_FILE (a text-mode file of the workspace),
;; `M-x eglot', then `M-x acp-bridge-prompt' with $ACP_TEST_PROMPT. The minibuffer questions are answered as
;; a completion UI would (`completing-read-function'): "Reject" when the question names $ACP_TEST_REJECT,
;; else "Allow once"; eglot's own confirmation of an edit (`y-or-n-p') is answered yes and recorded. When
;; *acp-bridge* shows the reply, writes what the user saw to $ACP_TEST_OUT and quits.
(require 'json)
(require 'eglot)

(defvar acp-test-questions nil)

(setq completing-read-function
      (lambda (prompt collection &rest _)
        (let* ((choices (all-completions "" collection))
               (answer (if (string-match-p (regexp-quote (getenv "ACP_TEST_REJECT")) prompt)
                           "Reject" "Allow once")))
          (push `((prompt . ,(substring-no-properties prompt)) (choices . ,(vconcat choices))
                  (answer . ,answer))
                acp-test-questions)
          answer)))

(advice-add 'y-or-n-p :override
            (lambda (prompt)
              (push `((prompt . ,(substring-no-properties prompt)) (answer . "y")) acp-test-questions)
              t))

;; What eglot shows in the mode line for each tool call (`$/progress': title, then each message).
(defvar acp-test-progress nil)
(advice-add 'eglot-handle-notification :before
            (lambda (_server method &rest args)
              (when (eq method '$/progress)
                (let ((value (plist-get args :value)))
                  (push `((kind . ,(plist-get value :kind)) (title . ,(or (plist-get value :title) :null))
                          (message . ,(or (plist-get value :message) :null)))
                        acp-test-progress)))))

(defun acp-test-buffer-text (name)
  (let ((buffer (get-buffer name)))
    (if buffer (with-current-buffer buffer (buffer-substring-no-properties (point-min) (point-max))) :null)))

(defun acp-test-wait (predicate seconds)
  (let ((deadline (+ (float-time) seconds)))
    (while (and (not (funcall predicate)) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (funcall predicate)))

(let* ((workspace (getenv "ACP_TEST_WORKSPACE"))
       (error-text nil))
  (condition-case err
      (progn
        (find-file (expand-file-name (getenv "ACP_TEST_FILE") workspace))
        (call-interactively #'eglot)
        (unless (acp-test-wait (lambda () (eglot-current-server)) 30)
          (error "eglot never connected"))
        (acp-bridge-prompt (getenv "ACP_TEST_PROMPT"))
        (unless (acp-test-wait (lambda () (let ((text (acp-test-buffer-text "*acp-bridge*")))
                                            (and (stringp text) (string-match-p "(end_turn)" text))))
                               60)
          (error "no reply in *acp-bridge*")))
    (error (setq error-text (format "%S" err))))
  (let ((report `((ok . ,(if error-text :false t))
                  (error . ,(or error-text :null))
                  (version . ,emacs-version)
                  (questions . ,(vconcat (reverse acp-test-questions)))
                  (progress . ,(vconcat (reverse acp-test-progress)))
                  (reply . ,(acp-test-buffer-text "*acp-bridge*"))
                  (app . ,(let ((buffer (get-file-buffer (expand-file-name "app.py" workspace))))
                            (if buffer (with-current-buffer buffer (buffer-string)) :null)))
                  (notes . ,(let ((buffer (get-file-buffer (expand-file-name "notes.md" workspace))))
                              (if buffer (with-current-buffer buffer (buffer-string)) :null)))
                  (messages . ,(acp-test-buffer-text "*Messages*")))))
    (with-temp-file (getenv "ACP_TEST_OUT")
      (insert (json-encode report))))
  (kill-emacs 0))
