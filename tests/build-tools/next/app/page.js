'use client';
// The smallest app in a client page: the page's own text first, then the outcome.
import { useEffect, useState } from 'react';
import { smallest } from '../smallest.js';

export default function Page() {
  const [out, setOut] = useState('app started');
  useEffect(() => {
    smallest().then((t) => setOut(`result: ${t}`), (e) => setOut(`error: ${e.name}: ${e.message}`));
  }, []);
  return <p id="out">{out}</p>;
}
