// CodeMirror 6 (from npm, bundled) for function code: JavaScript highlighting, brackets, search, history.
// The editor owns its DOM: Preact renders the host element once and never diffs it again (a re-render on every
// keystroke that reached into CodeMirror's DOM hung Chromium); new props are applied to the editor directly.
import { javascript } from "@codemirror/lang-javascript"
import { Compartment, EditorState } from "@codemirror/state"
import { EditorView, keymap } from "@codemirror/view"
import { basicSetup } from "codemirror"
import { Component, createRef } from "preact"

export interface CodeEditorProps {
  readonly value: string
  readonly onChange?: (value: string) => void
  readonly readOnly?: boolean
  /** Ctrl/Cmd+Enter */
  readonly onRun?: () => void
  readonly label: string
}

const editable = (readOnly: boolean) => [EditorState.readOnly.of(readOnly), EditorView.editable.of(!readOnly)]

export class CodeEditor extends Component<CodeEditorProps> {
  private readonly host = createRef<HTMLDivElement>()
  private view: EditorView | undefined
  private readonly access = new Compartment()
  /** what the editor last reported: a `value` equal to it is the echo of typing, not a new document */
  private emitted = this.props.value

  override componentDidMount() {
    this.view = new EditorView({
      parent: this.host.current!,
      state: EditorState.create({
        doc: this.props.value,
        extensions: [
          keymap.of([
            {
              key: "Mod-Enter",
              run: () => {
                this.props.onRun?.()
                return true
              }
            }
          ]),
          basicSetup,
          javascript(),
          this.access.of(editable(this.props.readOnly === true)),
          EditorView.contentAttributes.of({ "aria-label": this.props.label }),
          EditorView.updateListener.of((update) => {
            if (!update.docChanged) return
            this.emitted = update.state.doc.toString()
            this.props.onChange?.(this.emitted)
          })
        ]
      })
    })
  }

  override shouldComponentUpdate(next: CodeEditorProps) {
    const view = this.view
    if (view !== undefined) {
      // a value from outside (another version loaded): replace the document
      if (next.value !== this.emitted && next.value !== view.state.doc.toString()) {
        this.emitted = next.value
        view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: next.value } })
      }
      if ((next.readOnly === true) !== (this.props.readOnly === true)) {
        view.dispatch({ effects: this.access.reconfigure(editable(next.readOnly === true)) })
      }
    }
    return false
  }

  override componentWillUnmount() {
    this.view?.destroy()
  }

  override render() {
    return <div class="code-editor" ref={this.host} />
  }
}
