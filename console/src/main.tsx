import { render } from 'preact';
import { App } from './app.tsx';
import './styles.css';

const root = document.getElementById('app')!;
// The boot message is replaced, not kept beside the app.
root.textContent = '';
render(<App />, root);
